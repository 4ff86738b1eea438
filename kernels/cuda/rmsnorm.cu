// Implementation of rmsnorm.cuh (the formulas of kernels/cpu/rmsnorm.cpp): with xhat = inp * rstd
// and dn = dout * w, dinp = rstd * (dn - xhat * mean_c(dn * xhat)) and dw = sum_n dout * xhat.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/warp_reduce.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kWarpsPerBlock = 8;
constexpr int kRowsPerPartial = 256;  // rows summed by one block of the dw reduction
constexpr unsigned kChannelThreads = 256;

__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* inp, const float* w,
                                       int N, int C, float eps) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + size_t(row) * C;
  float* o = out + size_t(row) * C;
  float sq = 0;
  for (int c = lane; c < C; c += 32) sq += x[c] * x[c];
  const float s = rsqrtf(warp_sum(sq) / C + eps);
  for (int c = lane; c < C; c += 32) o[c] = x[c] * s * w[c];
  if (lane == 0) rstd[row] = s;
}

__global__ void rmsnorm_backward_dinp_kernel(float* dinp, const float* dout, const float* inp,
                                             const float* w, const float* rstd, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + size_t(row) * C;
  const float* g = dout + size_t(row) * C;
  float* dx = dinp + size_t(row) * C;
  const float s = rstd[row];
  float sum = 0;
  for (int c = lane; c < C; c += 32) sum += g[c] * w[c] * (x[c] * s);
  const float mean_dn_xhat = warp_sum(sum) / C;
  for (int c = lane; c < C; c += 32) dx[c] += s * (g[c] * w[c] - (x[c] * s) * mean_dn_xhat);
}

__global__ void rmsnorm_backward_partial_kernel(float* dw_part, const float* dout, const float* inp,
                                                const float* rstd, int N, int C) {
  const int c = blockIdx.y * kChannelThreads + threadIdx.x;
  if (c >= C) return;
  const int r0 = blockIdx.x * kRowsPerPartial;
  const int r1 = min(N, r0 + kRowsPerPartial);
  float dw = 0;
  for (int r = r0; r < r1; ++r) dw += dout[size_t(r) * C + c] * (inp[size_t(r) * C + c] * rstd[r]);
  dw_part[size_t(blockIdx.x) * C + c] = dw;
}

__global__ void rmsnorm_backward_sum_kernel(float* dw, const float* dw_part, int parts, int C) {
  const int c = blockIdx.x * kChannelThreads + threadIdx.x;
  if (c >= C) return;
  float s = 0;
  for (int p = 0; p < parts; ++p) s += dw_part[size_t(p) * C + c];
  dw[c] += s;
}

}  // namespace

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C,
                     double eps) {
  if (N == 0) return;
  const unsigned blocks = (N + kWarpsPerBlock - 1) / kWarpsPerBlock;
  rmsnorm_forward_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream()>>>(out, rstd, inp, w, N, C,
                                                                       float(eps));
  GOSSAMER_CUDA_LAUNCHED("rmsnorm_forward_kernel");
}

void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w,
                      const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;  // nothing to write (and no empty grid to launch)
  const unsigned blocks = (N + kWarpsPerBlock - 1) / kWarpsPerBlock;
  rmsnorm_backward_dinp_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream()>>>(dinp, dout, inp, w,
                                                                             rstd, N, C);
  GOSSAMER_CUDA_LAUNCHED("rmsnorm_backward_dinp_kernel");
  const int parts = (N + kRowsPerPartial - 1) / kRowsPerPartial;
  const unsigned channel_blocks = (C + kChannelThreads - 1) / kChannelThreads;
  auto* dw_part = static_cast<float*>(workspace(size_t(parts) * C * sizeof(float)));
  rmsnorm_backward_partial_kernel<<<dim3(parts, channel_blocks), kChannelThreads, 0, stream()>>>(
      dw_part, dout, inp, rstd, N, C);
  GOSSAMER_CUDA_LAUNCHED("rmsnorm_backward_partial_kernel");
  rmsnorm_backward_sum_kernel<<<channel_blocks, kChannelThreads, 0, stream()>>>(dw, dw_part, parts,
                                                                                C);
  GOSSAMER_CUDA_LAUNCHED("rmsnorm_backward_sum_kernel");
}

}  // namespace gossamer::kernels::cuda
