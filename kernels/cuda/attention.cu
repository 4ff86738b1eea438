// Implementation of attention.cuh. Three kernels and a row dot:
//   forward: block (16 query rows t0.., head h, batch b); per tile of 32 keys, each warp's lanes
//            score one key each (q . k from shared memory), update the running max m and sum l
//            and rescale the output accumulator (lane i holds dims i, i + 32, ...);
//   dq:      the same grid; per key tile, lane j recomputes att[t, s0 + j] = exp(z - m) / l
//            from the stats and ds = att (dout_t . v - D_t), then dq_t += scale sum_j ds_j k_j;
//   dk, dv:  block (16 keys s0.., kv head g, batch b); for each query head of the group in
//            order and each tile of 32 query rows t >= s0, lane j takes row t0 + j:
//            dk_s += scale sum ds q_t, dv_s += sum att dout_t.
// Shared tiles read one row per lane have stride hs + 1 (32 lanes, 32 banks). Causality: a
// warp skips the tiles past its row (forward, dq) or before its key (dk, dv), and masks the
// rest lane by lane; entries s > t are never formed.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/warp_reduce.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr int kRows = 16;  // rows of a block, one warp each
constexpr int kTile = 32;  // rows of a shared tile of the other side, one lane each
constexpr unsigned kThreads = kRows * 32;
constexpr int kMaxHeadSize = 256;
constexpr unsigned kFull = 0xffffffffu;
constexpr size_t kDefaultSharedBytes = 48 * 1024;  // above it a kernel must opt in

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
  __device__ size_t out_at(int b, int t, int h) const {  // (B,T,C): head h's row t
    return (size_t(b) * T + t) * C + size_t(h) * hs;
  }
  __device__ size_t row(int b, int h, int t) const { return (size_t(b) * NH + h) * T + t; }
};

Shape make_shape(int B, int T, int C, int NH, int NKV) {
  if (NH <= 0 || NKV <= 0 || NH % NKV != 0 || C % NH != 0) {
    char msg[160];
    std::snprintf(msg, sizeof msg,
                  "attention on CUDA: NH = %d query heads must be a multiple of NKV = %d kv heads "
                  "and divide C = %d",
                  NH, NKV, C);
    throw Error(msg);
  }
  const int hs = C / NH;
  return {B, T, C, NH, NKV, hs, C + 2 * NKV * hs, 1.0f / std::sqrt(float(hs))};
}

__device__ __forceinline__ float dot(const float* x, const float* y, int n) {
  float a = 0;
  for (int d = 0; d < n; ++d) a += x[d] * y[d];
  return a;
}

// Fills tile[r * ld + d] (r < rows, d < hs) with row(r)[d], or 0 where valid(r) is false.
template <class Row, class Valid>
__device__ void load_rows(float* tile, int ld, int rows, int hs, Row row, Valid valid) {
  for (int i = threadIdx.x; i < rows * hs; i += kThreads) {
    const int r = i / hs, d = i % hs;
    tile[r * ld + d] = valid(r) ? row(r)[d] : 0.0f;
  }
}

// DPL: dims per lane, hs <= 32 * DPL.
template <int DPL>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(float* out, float* stats, const float* qkv, Shape S) {
  extern __shared__ float smem[];
  const int hs = S.hs, ldk = hs + 1;
  float* Ks = smem;              // [kTile][hs + 1]
  float* Vs = Ks + kTile * ldk;  // [kTile][hs]
  float* Qs = Vs + kTile * hs;   // [kRows][hs]
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int b = blockIdx.z, h = blockIdx.y, g = h / (S.NH / S.NKV);
  const int t0 = blockIdx.x * kRows, t = t0 + w;
  const bool active = t < S.T;
  const int n_keys = min(S.T, t0 + kRows);  // the keys any row of the block sees
  load_rows(
      Qs, hs, kRows, hs, [&](int r) { return S.q(qkv, b, t0 + r, h); },
      [&](int r) { return t0 + r < S.T; });
  float m = -INFINITY, l = 0, acc[DPL];
  for (int i = 0; i < DPL; ++i) acc[i] = 0;
  for (int s0 = 0; s0 < n_keys; s0 += kTile) {
    __syncthreads();  // the last tile's readers are done
    load_rows(
        Ks, ldk, kTile, hs, [&](int j) { return S.k(qkv, b, s0 + j, g); },
        [&](int j) { return s0 + j < n_keys; });
    load_rows(
        Vs, hs, kTile, hs, [&](int j) { return S.v(qkv, b, s0 + j, g); },
        [&](int j) { return s0 + j < n_keys; });
    __syncthreads();
    if (!active || s0 > t) continue;  // warp-uniform
    const bool valid = s0 + lane <= t;
    const float z = valid ? dot(Qs + w * hs, Ks + lane * ldk, hs) * S.scale : -INFINITY;
    const float m_new = fmaxf(m, warp_max(z));  // finite: key s0 <= t is valid
    const float corr = expf(m - m_new);         // 0 on the first tile (m = -inf)
    const float p = valid ? expf(z - m_new) : 0.0f;
    l = l * corr + warp_sum(p);
    const int n_valid = min(kTile, t - s0 + 1);
#pragma unroll
    for (int i = 0; i < DPL; ++i) acc[i] *= corr;
    for (int j = 0; j < n_valid; ++j) {
      const float pj = __shfl_sync(kFull, p, j);
#pragma unroll
      for (int i = 0; i < DPL; ++i) {
        const int d = lane + 32 * i;
        if (d < hs) acc[i] += pj * Vs[j * hs + d];
      }
    }
    m = m_new;
  }
  if (!active) return;
  const float inv = 1.0f / l;
  float* o = out + S.out_at(b, t, h);
#pragma unroll
  for (int i = 0; i < DPL; ++i) {
    const int d = lane + 32 * i;
    if (d < hs) o[d] = acc[i] * inv;
  }
  if (lane == 0) {
    stats[2 * S.row(b, h, t)] = m;
    stats[2 * S.row(b, h, t) + 1] = inv;
  }
}

// One warp per (b, h, t): D = dout_t . out_t (= sum_s att[t, s] datt[t, s]).
__global__ void attention_row_dot_kernel(float* D, const float* dout, const float* out, Shape S) {
  const size_t row = blockIdx.x * size_t(kThreads / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= size_t(S.B) * S.NH * S.T) return;
  const int t = int(row % S.T), h = int(row / S.T % S.NH), b = int(row / S.T / S.NH);
  const size_t at = S.out_at(b, t, h);
  float a = 0;
  for (int d = lane; d < S.hs; d += 32) a += dout[at + d] * out[at + d];
  a = warp_sum(a);
  if (lane == 0) D[row] = a;
}

template <int DPL>
__global__ void __launch_bounds__(kThreads)
    attention_dq_kernel(float* dqkv, const float* D, const float* dout, const float* qkv,
                        const float* stats, Shape S) {
  extern __shared__ float smem[];
  const int hs = S.hs, ldk = hs + 1;
  float* Ks = smem;              // [kTile][hs + 1]
  float* Vs = Ks + kTile * ldk;  // [kTile][hs + 1]
  float* Qs = Vs + kTile * ldk;  // [kRows][hs]
  float* Gs = Qs + kRows * hs;   // [kRows][hs]: dout
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int b = blockIdx.z, h = blockIdx.y, g = h / (S.NH / S.NKV);
  const int t0 = blockIdx.x * kRows, t = t0 + w;
  const bool active = t < S.T;
  const int n_keys = min(S.T, t0 + kRows);
  auto in_rows = [&](int r) { return t0 + r < S.T; };
  load_rows(
      Qs, hs, kRows, hs, [&](int r) { return S.q(qkv, b, t0 + r, h); }, in_rows);
  load_rows(
      Gs, hs, kRows, hs, [&](int r) { return dout + S.out_at(b, t0 + r, h); }, in_rows);
  float m = 0, inv = 0, Dt = 0, acc[DPL];
  if (active) {
    m = stats[2 * S.row(b, h, t)];
    inv = stats[2 * S.row(b, h, t) + 1];
    Dt = D[S.row(b, h, t)];
  }
  for (int i = 0; i < DPL; ++i) acc[i] = 0;
  for (int s0 = 0; s0 < n_keys; s0 += kTile) {
    __syncthreads();
    auto in_keys = [&](int j) { return s0 + j < n_keys; };
    load_rows(
        Ks, ldk, kTile, hs, [&](int j) { return S.k(qkv, b, s0 + j, g); }, in_keys);
    load_rows(
        Vs, ldk, kTile, hs, [&](int j) { return S.v(qkv, b, s0 + j, g); }, in_keys);
    __syncthreads();
    if (!active || s0 > t) continue;
    float ds = 0;
    if (s0 + lane <= t) {
      const float p = expf(dot(Qs + w * hs, Ks + lane * ldk, hs) * S.scale - m) * inv;
      ds = p * (dot(Gs + w * hs, Vs + lane * ldk, hs) - Dt);
    }
    const int n_valid = min(kTile, t - s0 + 1);
    for (int j = 0; j < n_valid; ++j) {
      const float dsj = __shfl_sync(kFull, ds, j);
#pragma unroll
      for (int i = 0; i < DPL; ++i) {
        const int d = lane + 32 * i;
        if (d < hs) acc[i] += dsj * Ks[j * ldk + d];
      }
    }
  }
  if (!active) return;
  float* dq = dqkv + (size_t(b) * S.T + t) * S.R + size_t(h) * hs;
#pragma unroll
  for (int i = 0; i < DPL; ++i) {
    const int d = lane + 32 * i;
    if (d < hs) dq[d] += S.scale * acc[i];
  }
}

template <int DPL>
__global__ void __launch_bounds__(kThreads)
    attention_dkv_kernel(float* dqkv, const float* D, const float* dout, const float* qkv,
                         const float* stats, Shape S) {
  extern __shared__ float smem[];
  const int hs = S.hs, ldq = hs + 1;
  float* Qs = smem;              // [kTile][hs + 1]
  float* Gs = Qs + kTile * ldq;  // [kTile][hs + 1]: dout
  float* Kw = Gs + kTile * ldq;  // [kRows][hs]
  float* Vw = Kw + kRows * hs;   // [kRows][hs]
  float* Ms = Vw + kRows * hs;   // [kTile]: m, 1/l and D of the tile's rows
  float* Is = Ms + kTile;
  float* Ds = Is + kTile;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int b = blockIdx.z, g = blockIdx.y, group = S.NH / S.NKV;
  const int s0 = blockIdx.x * kRows, s = s0 + w;
  const bool active = s < S.T;
  auto in_keys = [&](int r) { return s0 + r < S.T; };
  load_rows(
      Kw, hs, kRows, hs, [&](int r) { return S.k(qkv, b, s0 + r, g); }, in_keys);
  load_rows(
      Vw, hs, kRows, hs, [&](int r) { return S.v(qkv, b, s0 + r, g); }, in_keys);
  float dk[DPL], dv[DPL];
  for (int i = 0; i < DPL; ++i) dk[i] = dv[i] = 0;
  for (int h = g * group; h < (g + 1) * group; ++h) {
    for (int t0 = s0; t0 < S.T; t0 += kTile) {  // rows t < s0 see none of the block's keys
      __syncthreads();
      auto in_rows = [&](int j) { return t0 + j < S.T; };
      load_rows(
          Qs, ldq, kTile, hs, [&](int j) { return S.q(qkv, b, t0 + j, h); }, in_rows);
      load_rows(
          Gs, ldq, kTile, hs, [&](int j) { return dout + S.out_at(b, t0 + j, h); }, in_rows);
      if (threadIdx.x < kTile) {
        const int j = threadIdx.x;
        const bool in = t0 + j < S.T;
        Ms[j] = in ? stats[2 * S.row(b, h, t0 + j)] : 0.0f;
        Is[j] = in ? stats[2 * S.row(b, h, t0 + j) + 1] : 0.0f;
        Ds[j] = in ? D[S.row(b, h, t0 + j)] : 0.0f;
      }
      __syncthreads();
      if (!active) continue;
      const int t = t0 + lane;
      float p = 0, ds = 0;
      if (t < S.T && t >= s) {
        p = expf(dot(Qs + lane * ldq, Kw + w * hs, hs) * S.scale - Ms[lane]) * Is[lane];
        ds = p * (dot(Gs + lane * ldq, Vw + w * hs, hs) - Ds[lane]);
      }
      const int n = min(kTile, S.T - t0);
      for (int j = 0; j < n; ++j) {
        const float pj = __shfl_sync(kFull, p, j), dsj = __shfl_sync(kFull, ds, j);
#pragma unroll
        for (int i = 0; i < DPL; ++i) {
          const int d = lane + 32 * i;
          if (d < hs) {
            dk[i] += dsj * Qs[j * ldq + d];
            dv[i] += pj * Gs[j * ldq + d];
          }
        }
      }
    }
  }
  if (!active) return;
  float* row = dqkv + (size_t(b) * S.T + s) * S.R + S.C;
#pragma unroll
  for (int i = 0; i < DPL; ++i) {
    const int d = lane + 32 * i;
    if (d < hs) {
      row[size_t(g) * hs + d] += S.scale * dk[i];
      row[size_t(S.NKV) * hs + size_t(g) * hs + d] += dv[i];
    }
  }
}

// Dims per lane for head size hs; throws above kMaxHeadSize.
int dims_per_lane(int hs) {
  if (hs > kMaxHeadSize) {
    char msg[160];
    std::snprintf(msg, sizeof msg,
                  "attention on CUDA: head size %d is above the kernels' limit of %d", hs,
                  kMaxHeadSize);
    throw Error(msg);
  }
  return hs <= 32 ? 1 : hs <= 64 ? 2 : hs <= 128 ? 4 : 8;
}

template <class... P, class... A>
void launch(void (*kernel)(P...), dim3 grid, size_t shared_bytes, const char* name, A... args) {
  if (shared_bytes > kDefaultSharedBytes) {
    GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(shared_bytes)));
  }
  kernel<<<grid, kThreads, shared_bytes, stream()>>>(args...);
  GOSSAMER_CUDA_LAUNCHED(name);
}

// kernel<DPL> for the head size: K is a class template with a static run<DPL>(...).
template <class K, class... A>
void dispatch(int hs, A... args) {
  switch (dims_per_lane(hs)) {
    case 1:
      K::template run<1>(args...);
      break;
    case 2:
      K::template run<2>(args...);
      break;
    case 4:
      K::template run<4>(args...);
      break;
    default:
      K::template run<8>(args...);
      break;
  }
}

unsigned row_blocks(int T) {
  return unsigned((T + kRows - 1) / kRows);
}

struct Forward {
  template <int DPL>
  static void run(float* out, float* stats, const float* qkv, const Shape& S) {
    const size_t bytes =
        sizeof(float) * (size_t(kTile) * (S.hs + 1) + size_t(kTile + kRows) * S.hs);
    launch(attention_forward_kernel<DPL>, dim3(row_blocks(S.T), S.NH, S.B), bytes,
           "attention_forward_kernel", out, stats, qkv, S);
  }
};

struct Dq {
  template <int DPL>
  static void run(float* dqkv, const float* D, const float* dout, const float* qkv,
                  const float* stats, const Shape& S) {
    const size_t bytes =
        sizeof(float) * (2 * size_t(kTile) * (S.hs + 1) + 2 * size_t(kRows) * S.hs);
    launch(attention_dq_kernel<DPL>, dim3(row_blocks(S.T), S.NH, S.B), bytes, "attention_dq_kernel",
           dqkv, D, dout, qkv, stats, S);
  }
};

struct Dkv {
  template <int DPL>
  static void run(float* dqkv, const float* D, const float* dout, const float* qkv,
                  const float* stats, const Shape& S) {
    const size_t bytes = sizeof(float) * (2 * size_t(kTile) * (S.hs + 1) +
                                          2 * size_t(kRows) * S.hs + 3 * size_t(kTile));
    launch(attention_dkv_kernel<DPL>, dim3(row_blocks(S.T), S.NKV, S.B), bytes,
           "attention_dkv_kernel", dqkv, D, dout, qkv, stats, S);
  }
};

}  // namespace

size_t attention_saved_size(int B, int T, int NH) {
  return size_t(B) * NH * size_t(T) * 2;
}
size_t attention_scratch_size(int B, int T, int NH) {
  return size_t(B) * NH * size_t(T);
}

void attention_forward(float* out, float* stats, const float* qkv, int B, int T, int C, int NH,
                       int NKV) {
  if (size_t(B) * NH * T == 0) return;
  const Shape S = make_shape(B, T, C, NH, NKV);
  dispatch<Forward>(S.hs, out, stats, qkv, S);
}

void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                        const float* out, const float* stats, int B, int T, int C, int NH,
                        int NKV) {
  const size_t rows = size_t(B) * NH * T;
  if (rows == 0) return;
  const Shape S = make_shape(B, T, C, NH, NKV);
  dims_per_lane(S.hs);  // a head size above the limit throws before anything is launched
  const unsigned warps = kThreads / 32;
  attention_row_dot_kernel<<<unsigned((rows + warps - 1) / warps), kThreads, 0, stream()>>>(
      scratch, dout, out, S);
  GOSSAMER_CUDA_LAUNCHED("attention_row_dot_kernel");
  dispatch<Dq>(S.hs, dqkv, static_cast<const float*>(scratch), dout, qkv, stats, S);
  dispatch<Dkv>(S.hs, dqkv, static_cast<const float*>(scratch), dout, qkv, stats, S);
}

}  // namespace gossamer::kernels::cuda
