// Implementation of adam.cuh (kernels/cpu/adamw.cpp and adams.cpp, in float).
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/adam.cuh"
#include "kernels/cuda/cuda_context.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;

__global__ void adamw_kernel(float* param, const float* grad, float* m, float* v, size_t n,
                             float b1, float b2, float step_size, float inv_sqrt_bc2, float decay,
                             float eps) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float g = grad[i];
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * decay - step_size * mi / (sqrtf(vi) * inv_sqrt_bc2 + eps);
  }
}

__global__ void adams_kernel(float* param, const float* grad, float* m, size_t n, float b1,
                             float b2, float inv_c, float decay, float eps, float lr) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float g = grad[i];
    const float prev = m[i] * inv_c;
    const float den = sqrtf(b2 * prev * prev + (1.0f - b2) * g * g) + eps;
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    m[i] = mi;
    param[i] = param[i] * decay - lr * (mi * inv_c) / den;
  }
}

}  // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, size_t n,
                  const AdamStep& hp) {
  if (n == 0) return;
  const float bc1 = 1.0f - static_cast<float>(std::pow(double(hp.beta1), double(hp.t)));
  const float bc2 = 1.0f - static_cast<float>(std::pow(double(hp.beta2), double(hp.t)));
  const float step_size = hp.lr / bc1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  const float decay = 1.0f - hp.lr * hp.weight_decay;
  adamw_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(
      param, grad, m, v, n, hp.beta1, hp.beta2, step_size, inv_sqrt_bc2, decay, hp.eps);
  GOSSAMER_CUDA_LAUNCHED("adamw_kernel");
}

void adams_update(float* param, const float* grad, float* m, size_t n, const AdamStep& hp) {
  if (n == 0) return;
  const float inv_c =
      hp.code_form ? 1.0f / (1.0f - static_cast<float>(std::pow(double(hp.beta1), double(hp.t))))
                   : 1.0f;
  const float decay = 1.0f - hp.lr * hp.weight_decay;
  adams_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(
      param, grad, m, n, hp.beta1, hp.beta2, inv_c, decay, hp.eps, hp.lr);
  GOSSAMER_CUDA_LAUNCHED("adams_kernel");
}

}  // namespace gossamer::kernels::cuda
