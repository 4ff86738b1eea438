// ops_for_run() (see device_ops.h).
#include "train/device_ops.h"

#include <string>

#include "comm/launch_env.h"
#include "core/error.h"
#include "core/log.h"
#ifdef GOSSAMER_HAVE_CUDA
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/ops_table.h"
#endif

namespace gossamer::train {

const kernels::OpTable& ops_for_run(const kernels::cpu::KernelsConfig& kernels, int world,
                                    const char* key) {
  // Host-side work (data, sampling, the loss sum) uses the CPU threads on either device.
  kernels::cpu::configure_cpu_kernels(kernels, comm::ranks_on_this_node(world));
  if (kernels.device == kernels::cpu::KernelsDevice::KERNELS_DEVICE_CPU) return kernels::cpu_ops();
#ifdef GOSSAMER_HAVE_CUDA
  const int gpus = kernels::cuda::visible_gpus();
  GOSSAMER_CHECK(gpus > 0, "%s = cuda: no GPU is visible to this process", key);
  log_info("%s = cuda: the CUDA op table on GPU 0 of %d visible", key, gpus);
  return kernels::cuda::ops();
#else
  fail(
      "%s = cuda: this build has no CUDA backend (build with the CUDA toolkit installed, or "
      "-DGOSSAMER_CUDA=ON)",
      key);
#endif
}

}  // namespace gossamer::train
