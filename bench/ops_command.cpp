// `gossamer bench ops` (see op_bench.h): the per-op benchmark on the table of a run config's
// kernels.device, at its model, data.micro_batch and data.seq_len.
#include "bench/op_bench.h"
#include "run/device_ops.h"
#include "run/run_config.h"

namespace gossamer::bench {

int run_ops_command(const run::RunConfig& config, const OpBenchOptions& options) {
  const kernels::OpTable& ops = run::ops_for_run(config.kernels, 1, 0);
  run::GpuClaim claim(&ops != &kernels::cpu_ops());
  OpBuffers buffers(ops);
  const OpShapes shapes{config.model, config.data.micro_batch, config.data.seq_len};
  return run_op_bench(shapes, buffers, {}, options);
}

}  // namespace gossamer::bench
