// `gossamer bench`: times training steps of a config's model on synthetic tokens (no data
// files needed) and prints median step time, tokens/s and MFU against the sgemm peak measured
// in the same process. A benchmark program, not a test.
#pragma once

#include <cstdint>

#include "run/run_config.h"

namespace gossamer::bench {

struct BenchOptions {
  int64_t steps = 10;  // timed steps
  int64_t warmup = 2;  // untimed steps first
};

int run_train_bench(run::RunConfig config, const BenchOptions& options);

}  // namespace gossamer::bench
