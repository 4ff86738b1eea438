// ops_for_run() and matmul_peak_gflops() (see device_ops.h).
#include "train/device_ops.h"

#include <algorithm>
#include <string>
#include <vector>

#include "comm/launch_env.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#ifdef GOSSAMER_HAVE_CUDA
#include "kernels/cuda/ops_table.h"
#endif

namespace gossamer::train {

const kernels::OpTable& ops_for_run(const kernels::cpu::KernelsConfig& kernels, int world,
                                    const char* key) {
  // Host-side work (data, sampling, the loss sum) uses the CPU threads on either device.
  kernels::cpu::configure_cpu_kernels(kernels, comm::ranks_on_this_node(world));
  if (kernels.device == kernels::cpu::KernelsDevice::KERNELS_DEVICE_CPU) return kernels::cpu_ops();
#ifdef GOSSAMER_HAVE_CUDA
  const int gpus = kernels::cuda::device_count();
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

double matmul_peak_gflops(const kernels::OpTable& ops) {
  constexpr int n = 2048;
  const size_t elems = size_t(n) * n;
  Buffer<float> a(elems, *ops.memory), w(elems, *ops.memory), out(elems, *ops.memory);
  std::vector<float> host(elems);
  for (size_t i = 0; i < elems; ++i) host[i] = float(i % 17) * 0.01f;
  a.upload(host.data(), elems);
  w.upload(host.data(), elems);
  std::vector<double> seconds;
  float probe = 0;
  for (int rep = 0; rep < 4; ++rep) {
    Stopwatch clock;
    ops.matmul_forward(out.data(), a.data(), w.data(), nullptr, n, n, n);
    out.download(&probe, 1);  // complete when the copy is
    if (rep > 0) seconds.push_back(clock.seconds());
  }
  std::sort(seconds.begin(), seconds.end());
  return 2.0 * double(n) * n * n / seconds[1] / 1e9;
}

}  // namespace gossamer::train
