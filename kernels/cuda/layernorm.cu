// Implementation of layernorm.cuh (the formulas of kernels/cpu/layernorm.cpp).
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/layernorm.cuh"
#include "kernels/cuda/warp_reduce.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr float kEps = 1e-5f;
constexpr unsigned kWarpsPerBlock = 8;
constexpr int kRowsPerPartial = 256;  // rows summed by one block of the dw/db reduction
constexpr unsigned kChannelThreads = 256;

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp,
                                         const float* w, const float* b, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + size_t(row) * C;
  float* o = out + size_t(row) * C;
  float sum = 0;
  for (int c = lane; c < C; c += 32) sum += x[c];
  const float m = warp_sum(sum) / C;
  float sq = 0;
  for (int c = lane; c < C; c += 32) {
    const float d = x[c] - m;
    sq += d * d;
  }
  const float s = rsqrtf(warp_sum(sq) / C + kEps);
  for (int c = lane; c < C; c += 32) o[c] = (x[c] - m) * s * w[c] + b[c];
  if (lane == 0) mean[row] = m, rstd[row] = s;
}

__global__ void layernorm_backward_dinp_kernel(float* dinp, const float* dout, const float* inp,
                                               const float* w, const float* mean, const float* rstd,
                                               int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + size_t(row) * C;
  const float* g = dout + size_t(row) * C;
  float* dx = dinp + size_t(row) * C;
  const float m = mean[row], s = rstd[row];
  float sum_dn = 0, sum_dn_norm = 0;
  for (int c = lane; c < C; c += 32) {
    const float dn = g[c] * w[c];
    sum_dn += dn;
    sum_dn_norm += dn * ((x[c] - m) * s);
  }
  const float mean_dn = warp_sum(sum_dn) / C;
  const float mean_dn_norm = warp_sum(sum_dn_norm) / C;
  for (int c = lane; c < C; c += 32) {
    const float norm = (x[c] - m) * s;
    dx[c] += s * (g[c] * w[c] - mean_dn - norm * mean_dn_norm);
  }
}

// Block (p, cb): channels cb*kChannelThreads + t, rows [p*kRowsPerPartial, ...) in order.
__global__ void layernorm_backward_partial_kernel(float* dw_part, float* db_part, const float* dout,
                                                  const float* inp, const float* mean,
                                                  const float* rstd, int N, int C) {
  const int c = blockIdx.y * kChannelThreads + threadIdx.x;
  if (c >= C) return;
  const int r0 = blockIdx.x * kRowsPerPartial;
  const int r1 = min(N, r0 + kRowsPerPartial);
  float dw = 0, db = 0;
  for (int r = r0; r < r1; ++r) {
    const float g = dout[size_t(r) * C + c];
    dw += g * ((inp[size_t(r) * C + c] - mean[r]) * rstd[r]);
    db += g;
  }
  dw_part[size_t(blockIdx.x) * C + c] = dw;
  db_part[size_t(blockIdx.x) * C + c] = db;
}

__global__ void layernorm_backward_sum_kernel(float* dw, float* db, const float* dw_part,
                                              const float* db_part, int parts, int C) {
  const int c = blockIdx.x * kChannelThreads + threadIdx.x;
  if (c >= C) return;
  float sw = 0, sb = 0;
  for (int p = 0; p < parts; ++p) {
    sw += dw_part[size_t(p) * C + c];
    sb += db_part[size_t(p) * C + c];
  }
  dw[c] += sw;
  db[c] += sb;
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                       const float* b, int N, int C) {
  if (N == 0) return;
  const unsigned blocks = (N + kWarpsPerBlock - 1) / kWarpsPerBlock;
  layernorm_forward_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream()>>>(out, mean, rstd, inp, w, b,
                                                                         N, C);
  GOSSAMER_CUDA_LAUNCHED("layernorm_forward_kernel");
}

void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                        const float* w, const float* mean, const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;  // nothing to write (and no empty grid to launch)
  const unsigned blocks = (N + kWarpsPerBlock - 1) / kWarpsPerBlock;
  layernorm_backward_dinp_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream()>>>(dinp, dout, inp, w,
                                                                               mean, rstd, N, C);
  GOSSAMER_CUDA_LAUNCHED("layernorm_backward_dinp_kernel");
  const int parts = (N + kRowsPerPartial - 1) / kRowsPerPartial;
  const unsigned channel_blocks = (C + kChannelThreads - 1) / kChannelThreads;
  auto* dw_part = static_cast<float*>(workspace(2 * size_t(parts) * C * sizeof(float)));
  float* db_part = dw_part + size_t(parts) * C;
  layernorm_backward_partial_kernel<<<dim3(parts, channel_blocks), kChannelThreads, 0, stream()>>>(
      dw_part, db_part, dout, inp, mean, rstd, N, C);
  GOSSAMER_CUDA_LAUNCHED("layernorm_backward_partial_kernel");
  layernorm_backward_sum_kernel<<<channel_blocks, kChannelThreads, 0, stream()>>>(
      dw, db, dw_part, db_part, parts, C);
  GOSSAMER_CUDA_LAUNCHED("layernorm_backward_sum_kernel");
}

}  // namespace gossamer::kernels::cuda
