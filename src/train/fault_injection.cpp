// fault_plan_from_env(): parses GOSSAMER_FAULT="KIND:RANK:STEP".
#include "train/fault_injection.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/log.h"

namespace gossamer::train {

FaultPlan fault_plan_from_env() {
  FaultPlan p;
  const char* v = std::getenv("GOSSAMER_FAULT");
  if (!v || !*v) return p;
  char kind[16] = {};
  int rank = -1;
  long long step = -1;
  GOSSAMER_CHECK(
      std::sscanf(v, "%15[a-z]:%d:%lld", kind, &rank, &step) == 3 &&
          (!std::strcmp(kind, "nan") || !std::strcmp(kind, "hang") || !std::strcmp(kind, "exit")) &&
          rank >= 0 && step >= 1,
      "GOSSAMER_FAULT=\"%s\": expected KIND:RANK:STEP with KIND nan, hang or exit", v);
  p.kind = kind, p.rank = rank, p.step = step;
  log_warn("GOSSAMER_FAULT: rank %d will inject \"%s\" at step %lld (testing only)", rank, kind,
           step);
  return p;
}

}  // namespace gossamer::train
