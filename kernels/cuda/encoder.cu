// Implementation of encoder.cuh.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/encoder.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;

__global__ void encoder_forward_kernel(float* out, const int32_t* tokens, const float* wte,
                                       const float* wpe, int T, int C, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t bt = i / C;
    const int c = int(i % C), t = int(bt % T);
    const float e = wte[size_t(tokens[bt]) * C + c];
    out[i] = wpe ? e + wpe[size_t(t) * C + c] : e;
  }
}

__global__ void encoder_backward_wpe_kernel(float* dwpe, const float* dout, int B, int T, int C) {
  const size_t n = size_t(T) * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float s = 0;
    for (int b = 0; b < B; ++b) s += dout[size_t(b) * n + i];
    dwpe[i] += s;
  }
}

__global__ void encoder_backward_wte_kernel(float* dwte, const float* dout, const int32_t* tokens,
                                            int BT, int C) {
  const int c = blockIdx.x * kThreads + threadIdx.x;
  if (c >= C) return;
  for (int bt = 0; bt < BT; ++bt) dwte[size_t(tokens[bt]) * C + c] += dout[size_t(bt) * C + c];
}

}  // namespace

void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                     int T, int C) {
  const size_t n = size_t(B) * T * C;
  if (n == 0) return;
  encoder_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, tokens, wte, wpe, T,
                                                                           C, n);
  GOSSAMER_CUDA_LAUNCHED("encoder_forward_kernel");
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                      int T, int C) {
  if (size_t(B) * T * C == 0) return;
  encoder_backward_wte_kernel<<<(C + kThreads - 1) / kThreads, kThreads, 0, stream()>>>(
      dwte, dout, tokens, B * T, C);
  GOSSAMER_CUDA_LAUNCHED("encoder_backward_wte_kernel");
  if (dwpe == nullptr) return;
  encoder_backward_wpe_kernel<<<grid_for(size_t(T) * C, kThreads), kThreads, 0, stream()>>>(
      dwpe, dout, B, T, C);
  GOSSAMER_CUDA_LAUNCHED("encoder_backward_wpe_kernel");
}

}  // namespace gossamer::kernels::cuda
