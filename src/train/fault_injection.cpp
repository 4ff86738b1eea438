// parse_fault_plan(): GOSSAMER_FAULT="KIND:RANK:STEP" or "delay:RANK:STEP:MS".
#include "train/fault_injection.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/log.h"

namespace gossamer::train {

FaultPlan parse_fault_plan(const std::string& value) {
  FaultPlan p;
  char kind[16] = {};
  int rank = -1;
  long long step = -1, ms = -1;
  char extra = 0;
  const int n =
      std::sscanf(value.c_str(), "%15[a-z]:%d:%lld:%lld%c", kind, &rank, &step, &ms, &extra);
  const bool delay = !std::strcmp(kind, "delay");
  const bool known = delay || !std::strcmp(kind, "nan") || !std::strcmp(kind, "hang") ||
                     !std::strcmp(kind, "exit");
  GOSSAMER_CHECK(known && rank >= 0 && step >= 1 && (delay ? n == 4 && ms >= 0 : n == 3),
                 "GOSSAMER_FAULT=\"%s\": expected KIND:RANK:STEP with KIND nan, hang or exit, or "
                 "delay:RANK:STEP:MS",
                 value.c_str());
  p.kind = kind, p.rank = rank, p.step = step, p.delay_ms = delay ? ms : 0;
  return p;
}

FaultPlan fault_plan_from_env() {
  const char* v = std::getenv("GOSSAMER_FAULT");
  if (!v || !*v) return {};
  const FaultPlan p = parse_fault_plan(v);
  if (p.kind == "delay")
    log_warn("GOSSAMER_FAULT: rank %d will sleep %lld ms before step %lld (testing only)", p.rank,
             (long long)p.delay_ms, (long long)p.step);
  else
    log_warn("GOSSAMER_FAULT: rank %d will inject \"%s\" at step %lld (testing only)", p.rank,
             p.kind.c_str(), (long long)p.step);
  return p;
}

}  // namespace gossamer::train
