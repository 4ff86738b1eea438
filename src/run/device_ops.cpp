// ops_for_run(), GpuClaim and make_buffer_communicator() (see device_ops.h).
#include "run/device_ops.h"

#include <atomic>
#include <string>

#include "comm/launch_env.h"
#include "core/error.h"
#include "core/log.h"
#ifdef GOSSAMER_HAVE_CUDA
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/ops_table.h"
#endif
#ifdef GOSSAMER_HAVE_NCCL
#include "comm/nccl_communicator.h"
#endif

namespace gossamer::run {

namespace {
std::atomic<bool> g_gpu_claimed{false};  // the one process-wide flag: see GpuClaim
}  // namespace

GpuClaim::GpuClaim(bool on_gpu, const char* key) {
  if (!on_gpu) return;
  bool free = false;
  GOSSAMER_CHECK(g_gpu_claimed.compare_exchange_strong(free, true),
                 "%s = cuda: another run of this process is using the GPU, and the CUDA "
                 "backend's stream, workspace and plans are per process (docs/ARCHITECTURE.md, "
                 "\"State a run shares\"): run one GPU training per process",
                 key);
  held_ = true;
}

GpuClaim::~GpuClaim() {
  if (held_) g_gpu_claimed.store(false);
}

const kernels::OpTable& ops_for_run(const kernels::cpu::KernelsConfig& kernels, int world,
                                    int local_rank, const char* key) {
  // Host-side work (data, sampling, the loss sum) uses the CPU threads on either device.
  kernels::cpu::configure_cpu_kernels(kernels, comm::ranks_on_this_node(world));
  if (kernels.device == kernels::cpu::KernelsDevice::KERNELS_DEVICE_CPU) return kernels::cpu_ops();
#ifdef GOSSAMER_HAVE_CUDA
  const int gpus = kernels::cuda::visible_gpus();
  GOSSAMER_CHECK(gpus > 0, "%s = cuda: no GPU is visible to this process", key);
  GOSSAMER_CHECK(local_rank < gpus,
                 "%s = cuda: one GPU per rank, but this process is rank %d of its node and only "
                 "%d GPU(s) are visible (launch at most %d rank(s) per node)",
                 key, local_rank, gpus, gpus);
  kernels::cuda::use_device(local_rank);  // before the first allocation
  log_info(
      "%s = cuda: the CUDA op table on GPU %d of %d visible (fp32; attention flash-style on the "
      "CUDA cores, head sizes up to 256)",
      key, local_rank, gpus);
  return kernels::cuda::ops();
#else
  fail(
      "%s = cuda: this build has no CUDA backend (build with the CUDA toolkit installed, or "
      "-DGOSSAMER_CUDA=ON)",
      key);
#endif
}

std::unique_ptr<comm::Communicator> make_buffer_communicator(comm::Backend backend) {
  // choose_backend refuses mpi and a launched single for device buffers, naming the key.
  std::unique_ptr<comm::Communicator> comm =
      comm::make_communicator(backend, comm::BufferLocation::BUFFER_LOCATION_DEVICE);
#ifdef GOSSAMER_HAVE_NCCL
  // NCCL runs on its own stream; each operation first waits for what the ops issued before it.
  comm::nccl_set_compute_stream(*comm, kernels::cuda::stream());
#endif
  return comm;
}

}  // namespace gossamer::run
