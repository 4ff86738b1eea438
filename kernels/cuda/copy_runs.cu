// Implementation of copy_runs.cuh.
#include <cuda_runtime.h>

#include "kernels/cuda/copy_runs.cuh"
#include "kernels/cuda/cuda_context.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr size_t kMaxBlocks = 65535;

template <bool kAccumulate>
__global__ void runs_kernel(float* dst, const float* src, const CopyRun* runs, size_t n_runs) {
  for (size_t j = blockIdx.x; j < n_runs; j += gridDim.x) {
    const CopyRun r = runs[j];
    float* d = dst + r.dst_offset;
    const float* s = src + r.src_offset;
    for (size_t i = threadIdx.x; i < r.n; i += blockDim.x) {
      if (kAccumulate)
        d[i] += s[i];
      else
        d[i] = s[i];
    }
  }
}

template <bool kAccumulate>
void launch(float* dst, const float* src, const CopyRun* runs, size_t n_runs, const char* name) {
  if (n_runs == 0) return;
  const unsigned blocks = unsigned(n_runs < kMaxBlocks ? n_runs : kMaxBlocks);
  runs_kernel<kAccumulate><<<blocks, kThreads, 0, stream()>>>(dst, src, runs, n_runs);
  GOSSAMER_CUDA_LAUNCHED(name);
}

}  // namespace

void copy_runs(float* dst, const float* src, const CopyRun* runs, size_t n_runs) {
  launch<false>(dst, src, runs, n_runs, "copy_runs");
}

void accumulate_runs(float* dst, const float* src, const CopyRun* runs, size_t n_runs) {
  launch<true>(dst, src, runs, n_runs, "accumulate_runs");
}

}  // namespace gossamer::kernels::cuda
