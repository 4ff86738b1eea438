// Implementation of gelu.cuh (the formulas of kernels/cpu/gelu.cpp, in float).
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/gelu.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

__device__ __forceinline__ float gelu_exp(float x) {
  const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
  return expf(fminf(-2.0f * u, 80.0f));
}

__global__ void gelu_forward_kernel(float* out, const float* inp, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float x = inp[i];
    out[i] = x / (1.0f + gelu_exp(x));
  }
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float x = inp[i];
    const float e = gelu_exp(x);
    const float sg = 1.0f / (1.0f + e);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
    dinp[i] += dout[i] * (sg + 2.0f * x * sg * (e * sg) * du);
  }
}

}  // namespace

void gelu_forward(float* out, const float* inp, size_t n) {
  if (n == 0) return;
  gelu_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, inp, n);
  GOSSAMER_CUDA_LAUNCHED("gelu_forward_kernel");
}

void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
  if (n == 0) return;
  gelu_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(dinp, inp, dout, n);
  GOSSAMER_CUDA_LAUNCHED("gelu_backward_kernel");
}

}  // namespace gossamer::kernels::cuda
