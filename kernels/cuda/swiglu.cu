// Implementation of swiglu.cuh.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;

__device__ __forceinline__ float silu_exp(float x) {
  return expf(fminf(-x, 80.0f));
}

__global__ void swiglu_forward_kernel(float* out, const float* inp, int F, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t row = i / F;
    const int f = int(i % F);
    const float x = inp[row * 2 * F + f], up = inp[row * 2 * F + F + f];
    out[i] = x / (1.0f + silu_exp(x)) * up;
  }
}

__global__ void swiglu_backward_kernel(float* dinp, const float* dout, const float* inp, int F,
                                       size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t row = i / F;
    const int f = int(i % F);
    const size_t gi = row * 2 * F + f, ui = gi + F;
    const float x = inp[gi], up = inp[ui], g = dout[i];
    const float e = silu_exp(x);
    const float sg = 1.0f / (1.0f + e);
    dinp[gi] += g * up * (sg + x * sg * (e * sg));
    dinp[ui] += g * (x * sg);
  }
}

}  // namespace

void swiglu_forward(float* out, const float* inp, int N, int F) {
  const size_t n = size_t(N) * F;
  if (n == 0) return;
  swiglu_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, inp, F, n);
  GOSSAMER_CUDA_LAUNCHED("swiglu_forward_kernel");
}

void swiglu_backward(float* dinp, const float* dout, const float* inp, int N, int F) {
  const size_t n = size_t(N) * F;
  if (n == 0) return;
  swiglu_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(dinp, dout, inp, F, n);
  GOSSAMER_CUDA_LAUNCHED("swiglu_backward_kernel");
}

}  // namespace gossamer::kernels::cuda
