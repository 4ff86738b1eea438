// What a run computes and communicates with, from its `kernels` and `parallel` sections.
// ops_for_run: kernels.device = cpu, the CPU table after this process's threads and gemm
// backend were set; cuda, the CUDA table (every kernel of kernels/cuda/, buffers in GPU memory)
// on GPU local_rank of the node (one GPU per rank). make_buffer_communicator: the communicator
// for buffers in device memory at several ranks (NCCL), its operations ordered after the ops'
// stream. Errors name the key: a build without CUDA, no GPU visible, more ranks on a node than
// GPUs, a backend that cannot move device memory. Every choice is logged.
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "kernels/cpu/cpu_setup.h"
#include "kernels/ops.h"

namespace gossamer::run {

// `local_rank`: this process's rank among the ranks of its node (0 for a single process).
// `key` names the setting in errors and the log (a command-line flag where one chose the device).
const kernels::OpTable& ops_for_run(const kernels::cpu::KernelsConfig& kernels, int world,
                                    int local_rank, const char* key = "kernels.device");

// The CUDA backend keeps one stream, workspace, cuBLASLt handle and plan cache per process
// (kernels/cuda/cuda_context.cuh): the runs of one process use the GPU one at a time. A run on
// the GPU holds a GpuClaim for its whole life; a second one while it is held is refused, naming
// `key` (a run on the CPU claims nothing).
class GpuClaim {
 public:
  explicit GpuClaim(bool on_gpu, const char* key = "kernels.device");
  ~GpuClaim();
  GpuClaim(const GpuClaim&) = delete;
  GpuClaim& operator=(const GpuClaim&) = delete;

 private:
  bool held_ = false;
};

// parallel.backend resolved for device buffers at several ranks (auto or nccl: NCCL; mpi and
// single are refused, naming the key: this build's MPI is not CUDA-aware); every operation
// waits on the device for the work already issued to the CUDA ops' stream.
std::unique_ptr<comm::Communicator> make_buffer_communicator(comm::Backend backend);

}  // namespace gossamer::run
