// Implementation of mask_score.cuh.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/mask_score.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;

__global__ void mask_score_kernel(float* out, float a, const float* x, float b, const float* y,
                                  size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = y == nullptr ? fabsf(a * x[i]) : fabsf(a * x[i] + b * y[i]);
}

__global__ void age_bonus_kernel(float* scores, const float* last, float k, float now, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    scores[i] *= 1.0f + k * fmaxf(0.0f, now - last[i]);
}

}  // namespace

void mask_score(float* out, float a, const float* x, float b, const float* y, size_t n) {
  if (n == 0) return;
  mask_score_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, a, x, b, y, n);
  GOSSAMER_CUDA_LAUNCHED("mask_score_kernel");
}

void age_bonus(float* scores, const float* last, float k, float now, size_t n) {
  if (n == 0) return;
  age_bonus_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(scores, last, k, now, n);
  GOSSAMER_CUDA_LAUNCHED("age_bonus_kernel");
}

}  // namespace gossamer::kernels::cuda
