// parse_fault_plan(): GOSSAMER_FAULT="KIND:RANK:STEP" or "delay:RANK:STEP:MS[:COUNT]".
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
  long long step = -1, ms = -1, count = 1;
  int used3 = -1, used4 = -1, used5 = -1;  // characters read through each field
  const int n = std::sscanf(value.c_str(), "%15[a-z]:%d:%lld%n:%lld%n:%lld%n", kind, &rank, &step,
                            &used3, &ms, &used4, &count, &used5);
  const int used = n == 5 ? used5 : n == 4 ? used4 : n == 3 ? used3 : -1;
  const bool whole = used == int(value.size());  // nothing after the last field
  const bool delay = !std::strcmp(kind, "delay");
  const bool known = delay || !std::strcmp(kind, "nan") || !std::strcmp(kind, "hang") ||
                     !std::strcmp(kind, "exit");
  GOSSAMER_CHECK(whole && known && rank >= 0 && step >= 1 &&
                     (delay ? (n == 4 || n == 5) && ms >= 0 && count >= 0 : n == 3),
                 "GOSSAMER_FAULT=\"%s\": expected KIND:RANK:STEP with KIND nan, hang or exit, or "
                 "delay:RANK:STEP:MS[:COUNT]",
                 value.c_str());
  p.kind = kind, p.rank = rank, p.step = step, p.delay_ms = delay ? ms : 0;
  p.count = delay ? count : 1;
  return p;
}

FaultPlan fault_plan_from_env() {
  const char* v = std::getenv("GOSSAMER_FAULT");
  if (!v || !*v) return {};
  const FaultPlan p = parse_fault_plan(v);
  if (p.kind == "delay" && p.count == 1)
    log_warn("GOSSAMER_FAULT: rank %d will sleep %lld ms before step %lld (testing only)", p.rank,
             (long long)p.delay_ms, (long long)p.step);
  else if (p.kind == "delay")
    log_warn(
        "GOSSAMER_FAULT: rank %d will sleep %lld ms before each step it computes from step %lld "
        "%s (testing only)",
        p.rank, (long long)p.delay_ms, (long long)p.step,
        p.count == 0 ? "on" : strprintf("for %lld steps", (long long)p.count).c_str());
  else
    log_warn("GOSSAMER_FAULT: rank %d will inject \"%s\" at step %lld (testing only)", p.rank,
             p.kind.c_str(), (long long)p.step);
  return p;
}

}  // namespace gossamer::train
