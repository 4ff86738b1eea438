// Implementation of outer_update.cuh.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/outer_update.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;

__global__ void nesterov_outer_kernel(float* anchor, float* m, const float* delta, float lr,
                                      float mu, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float mi = mu * m[i] + delta[i];
    m[i] = mi;
    anchor[i] -= lr * (delta[i] + mu * mi);
  }
}

}  // namespace

void nesterov_outer(float* anchor, float* m, const float* delta, float lr, float mu, size_t n) {
  if (n == 0) return;
  nesterov_outer_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(anchor, m, delta, lr, mu,
                                                                          n);
  GOSSAMER_CUDA_LAUNCHED("nesterov_outer_kernel");
}

}  // namespace gossamer::kernels::cuda
