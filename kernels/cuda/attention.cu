// Implementation of attention.cuh.
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/warp_reduce.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kWarpsPerBlock = kThreads / 32;

struct Shape {
  int B, T, C, NH, NKV, hs, R;  // R: the qkv row stride
  float scale;
  __device__ const float* q(const float* qkv, int b, int t, int h) const {
    return qkv + (size_t(b) * T + t) * R + size_t(h) * hs;
  }
  __device__ const float* k(const float* qkv, int b, int s, int g) const {
    return qkv + (size_t(b) * T + s) * R + C + size_t(g) * hs;
  }
  __device__ const float* v(const float* qkv, int b, int s, int g) const {
    return qkv + (size_t(b) * T + s) * R + C + size_t(NKV) * hs + size_t(g) * hs;
  }
  __device__ size_t att_row(int b, int h, int t) const {
    return ((size_t(b) * NH + h) * T + t) * size_t(T);
  }
  // The position of element i of a (B, T, C) tensor: batch, time, query head, its kv head, and
  // the index d inside the head.
  struct Pos {
    int b, t, h, g, d;
  };
  __device__ Pos pos(size_t i) const {
    const int h = int(i / hs % NH);
    return {int(i / C / T), int(i / C % T), h, h / (NH / NKV), int(i % hs)};
  }
};

Shape make_shape(int B, int T, int C, int NH, int NKV) {
  const int hs = C / NH;
  return {B, T, C, NH, NKV, hs, C + 2 * NKV * hs, 1.0f / std::sqrt(float(hs))};
}

// One warp per (b, h, t): scores, softmax over s <= t, zeros after.
__global__ void attention_softmax_kernel(float* att, const float* qkv, Shape S) {
  const size_t row = blockIdx.x * size_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= size_t(S.B) * S.NH * S.T) return;
  const int t = int(row % S.T), h = int(row / S.T % S.NH), b = int(row / S.T / S.NH);
  const int g = h / (S.NH / S.NKV);
  const float* q = S.q(qkv, b, t, h);
  float* a = att + S.att_row(b, h, t);
  float mx = -INFINITY;
  for (int s = lane; s <= t; s += 32) {
    const float* k = S.k(qkv, b, s, g);
    float dot = 0;
    for (int d = 0; d < S.hs; ++d) dot += q[d] * k[d];
    a[s] = dot * S.scale;
    mx = fmaxf(mx, a[s]);
  }
  mx = warp_max(mx);
  float sum = 0;
  for (int s = lane; s <= t; s += 32) {
    const float e = expf(a[s] - mx);
    a[s] = e;
    sum += e;
  }
  const float inv = 1.0f / warp_sum(sum);
  for (int s = lane; s < S.T; s += 32) a[s] = s <= t ? a[s] * inv : 0.0f;
}

// One thread per (b, t, h, d): out = sum_{s<=t} att v_s.
__global__ void attention_out_kernel(float* out, const float* att, const float* qkv, Shape S) {
  const size_t n = size_t(S.B) * S.T * S.C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const Shape::Pos p = S.pos(i);
    const float* a = att + S.att_row(p.b, p.h, p.t);
    float acc = 0;
    for (int s = 0; s <= p.t; ++s) acc += a[s] * S.v(qkv, p.b, s, p.g)[p.d];
    out[i] = acc;
  }
}

// One warp per (b, h, t): scratch = d(pre-softmax scores) = att (datt - sum_s att datt).
__global__ void attention_dscores_kernel(float* scratch, const float* dout, const float* qkv,
                                         const float* att, Shape S) {
  const size_t row = blockIdx.x * size_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= size_t(S.B) * S.NH * S.T) return;
  const int t = int(row % S.T), h = int(row / S.T % S.NH), b = int(row / S.T / S.NH);
  const int g = h / (S.NH / S.NKV);
  const float* go = dout + (size_t(b) * S.T + t) * S.C + size_t(h) * S.hs;
  const float* a = att + S.att_row(b, h, t);
  float* ds = scratch + S.att_row(b, h, t);
  float dot_sum = 0;
  for (int s = lane; s <= t; s += 32) {
    const float* v = S.v(qkv, b, s, g);
    float datt = 0;
    for (int d = 0; d < S.hs; ++d) datt += go[d] * v[d];
    ds[s] = datt;
    dot_sum += a[s] * datt;
  }
  dot_sum = warp_sum(dot_sum);
  for (int s = lane; s < S.T; s += 32) ds[s] = s <= t ? a[s] * (ds[s] - dot_sum) : 0.0f;
}

// One thread per (b, t, h, d): dq += scale sum_{s<=t} dscores k_s.
__global__ void attention_dq_kernel(float* dqkv, const float* scratch, const float* qkv, Shape S) {
  const size_t n = size_t(S.B) * S.T * S.C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const Shape::Pos p = S.pos(i);
    const float* ds = scratch + S.att_row(p.b, p.h, p.t);
    float acc = 0;
    for (int s = 0; s <= p.t; ++s) acc += ds[s] * S.k(qkv, p.b, s, p.g)[p.d];
    dqkv[(size_t(p.b) * S.T + p.t) * S.R + size_t(p.h) * S.hs + p.d] += S.scale * acc;
  }
}

// One thread per (b, s, g, d): dk, dv of kv head g at position s, summed over the group's query
// heads and t >= s in order.
__global__ void attention_dkv_kernel(float* dqkv, const float* scratch, const float* dout,
                                     const float* qkv, const float* att, Shape S) {
  const size_t n = size_t(S.B) * S.T * S.NKV * S.hs;
  const int group = S.NH / S.NKV;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int d = int(i % S.hs), g = int(i / S.hs % S.NKV);
    const int s = int(i / S.hs / S.NKV % S.T), b = int(i / S.hs / S.NKV / S.T);
    float dk = 0, dv = 0;
    for (int h = g * group; h < (g + 1) * group; ++h)
      for (int t = s; t < S.T; ++t) {
        const size_t at = S.att_row(b, h, t) + s;
        dk += scratch[at] * S.q(qkv, b, t, h)[d];
        dv += att[at] * dout[(size_t(b) * S.T + t) * S.C + size_t(h) * S.hs + d];
      }
    float* row = dqkv + (size_t(b) * S.T + s) * S.R + S.C;
    row[size_t(g) * S.hs + d] += S.scale * dk;
    row[size_t(S.NKV) * S.hs + size_t(g) * S.hs + d] += dv;
  }
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       int NKV) {
  const size_t rows = size_t(B) * NH * T;
  if (rows == 0) return;
  const Shape S = make_shape(B, T, C, NH, NKV);
  attention_softmax_kernel<<<unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock), kThreads, 0,
                             stream()>>>(att, qkv, S);
  GOSSAMER_CUDA_LAUNCHED("attention_softmax_kernel");
  attention_out_kernel<<<grid_for(size_t(B) * T * C, kThreads), kThreads, 0, stream()>>>(out, att,
                                                                                         qkv, S);
  GOSSAMER_CUDA_LAUNCHED("attention_out_kernel");
}

void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH, int NKV) {
  const size_t rows = size_t(B) * NH * T;
  if (rows == 0) return;
  const Shape S = make_shape(B, T, C, NH, NKV);
  attention_dscores_kernel<<<unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock), kThreads, 0,
                             stream()>>>(scratch, dout, qkv, att, S);
  GOSSAMER_CUDA_LAUNCHED("attention_dscores_kernel");
  attention_dq_kernel<<<grid_for(size_t(B) * T * C, kThreads), kThreads, 0, stream()>>>(
      dqkv, scratch, qkv, S);
  GOSSAMER_CUDA_LAUNCHED("attention_dq_kernel");
  attention_dkv_kernel<<<grid_for(size_t(B) * T * NKV * S.hs, kThreads), kThreads, 0, stream()>>>(
      dqkv, scratch, dout, qkv, att, S);
  GOSSAMER_CUDA_LAUNCHED("attention_dkv_kernel");
}

}  // namespace gossamer::kernels::cuda
