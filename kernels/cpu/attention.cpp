// Causal self-attention with grouped-query attention, see attention.h.
// Forward: one work item per (b, h); it reads head h's q and its kv head's k/v and writes only
// att[b,h] and out's head-h columns of batch b. Backward, in two passes: rows, one work item per
// (b, h), write scratch[b,h] (dpreatt) and dqkv's head-h q columns; columns, one work item per
// (b, kv head, block of 16 keys), add into dk/dv rows of that block the contributions of every
// query head of the group, in head order. Items never share an output and every sum runs in a
// fixed order, so results do not depend on the thread count (and for NKV == NH they are the
// sums of the single-pass multi-head kernel, in the same order).
// The four products (q k^T, att v, and in the backward dout v^T, dpre k, dpre^T q, att^T dout)
// run on 4x4 register tiles over contiguous head rows: 4 query rows against 4 key rows, so each
// row read from L2 serves 4 rows of the other operand (a single-row loop is L2-bandwidth bound).
// Tiles on the diagonal also compute entries s > t; those are masked: att[t, s > t] = 0, and the
// backward stores dpreatt * scale in scratch[b,h,t,s] for s <= t and zeros up to the end of the
// 16-column block containing t (the tiles read them); later entries are never written or read.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "kernels/cpu/vec_math.h"

namespace gossamer::kernels::cpu {

namespace {

constexpr int kTile = 4;       // rows per side of a register tile
constexpr int kColBlock = 16;  // key columns per block of the backward's dk/dv pass

// r[i*ldr + j] = x_i . y_j for i, j < 4; rows x_i = x + i*ldx, y_j = y + j*ldy, n elements.
template <class R>
inline void dot_4x4(R* r, size_t ldr, const R* __restrict__ x, size_t ldx, const R* __restrict__ y,
                    size_t ldy, int n) {
  const R* __restrict__ x0 = x, * __restrict__ x1 = x + ldx, * __restrict__ x2 = x + 2 * ldx, * __restrict__ x3 = x + 3 * ldx;
  const R* __restrict__ y0 = y, * __restrict__ y1 = y + ldy, * __restrict__ y2 = y + 2 * ldy, * __restrict__ y3 = y + 3 * ldy;
  R a00 = 0, a01 = 0, a02 = 0, a03 = 0, a10 = 0, a11 = 0, a12 = 0, a13 = 0;
  R a20 = 0, a21 = 0, a22 = 0, a23 = 0, a30 = 0, a31 = 0, a32 = 0, a33 = 0;
#pragma omp simd reduction(+ : a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, \
                               a31, a32, a33)
  for (int d = 0; d < n; ++d) {
    const R p0 = x0[d], p1 = x1[d], p2 = x2[d], p3 = x3[d];
    const R k0 = y0[d], k1 = y1[d], k2 = y2[d], k3 = y3[d];
    a00 += p0 * k0, a01 += p0 * k1, a02 += p0 * k2, a03 += p0 * k3;
    a10 += p1 * k0, a11 += p1 * k1, a12 += p1 * k2, a13 += p1 * k3;
    a20 += p2 * k0, a21 += p2 * k1, a22 += p2 * k2, a23 += p2 * k3;
    a30 += p3 * k0, a31 += p3 * k1, a32 += p3 * k2, a33 += p3 * k3;
  }
  R* r0 = r;
  R* r1 = r + ldr;
  R* r2 = r + 2 * ldr;
  R* r3 = r + 3 * ldr;
  r0[0] = a00, r0[1] = a01, r0[2] = a02, r0[3] = a03;
  r1[0] = a10, r1[1] = a11, r1[2] = a12, r1[3] = a13;
  r2[0] = a20, r2[1] = a21, r2[2] = a22, r2[3] = a23;
  r3[0] = a30, r3[1] = a31, r3[2] = a32, r3[3] = a33;
}

// acc_i += sum_j c[i*ci + j*cj] x_j for i, j < 4; rows acc_i = acc + i*lda, x_j = x + j*ldx.
template <class R>
inline void axpy_4x4(R* acc, size_t lda, const R* c, size_t ci, size_t cj, const R* __restrict__ x,
                     size_t ldx, int n) {
  R* __restrict__ o0 = acc, * __restrict__ o1 = acc + lda, * __restrict__ o2 = acc + 2 * lda, * __restrict__ o3 = acc + 3 * lda;
  const R* __restrict__ x0 = x, * __restrict__ x1 = x + ldx, * __restrict__ x2 = x + 2 * ldx, * __restrict__ x3 = x + 3 * ldx;
  const R c00 = c[0], c01 = c[cj], c02 = c[2 * cj], c03 = c[3 * cj];
  const R c10 = c[ci], c11 = c[ci + cj], c12 = c[ci + 2 * cj], c13 = c[ci + 3 * cj];
  const R c20 = c[2 * ci], c21 = c[2 * ci + cj], c22 = c[2 * ci + 2 * cj], c23 = c[2 * ci + 3 * cj];
  const R c30 = c[3 * ci], c31 = c[3 * ci + cj], c32 = c[3 * ci + 2 * cj], c33 = c[3 * ci + 3 * cj];
#pragma omp simd
  for (int d = 0; d < n; ++d) {
    const R v0 = x0[d], v1 = x1[d], v2 = x2[d], v3 = x3[d];
    o0[d] += c00 * v0 + c01 * v1 + c02 * v2 + c03 * v3;
    o1[d] += c10 * v0 + c11 * v1 + c12 * v2 + c13 * v3;
    o2[d] += c20 * v0 + c21 * v1 + c22 * v2 + c23 * v3;
    o3[d] += c30 * v0 + c31 * v1 + c32 * v2 + c33 * v3;
  }
}

template <class R>
inline R dot_1(const R* __restrict__ x, const R* __restrict__ y, int n) {
  R a = 0;
#pragma omp simd reduction(+ : a)
  for (int d = 0; d < n; ++d) a += x[d] * y[d];
  return a;
}

template <class R>
inline void axpy_1(R* __restrict__ acc, R c, const R* __restrict__ x, int n) {
#pragma omp simd
  for (int d = 0; d < n; ++d) acc[d] += c * x[d];
}

// One query row (for the rows left over after the 4-row tiles):
// r[s] = x . y_s for s < m, rows y_s = y + s*ldy.
template <class R>
inline void dot_row(R* r, const R* x, const R* y, size_t ldy, int m, int n) {
  for (int s = 0; s < m; ++s) r[s] = dot_1(x, y + s * ldy, n);
}

// acc += sum_{s<m} c[s] y_s.
template <class R>
inline void axpy_row(R* acc, const R* c, const R* y, size_t ldy, int m, int n) {
  for (int s = 0; s < m; ++s) axpy_1(acc, c[s], y + s * ldy, n);
}

// a[0:n] = softmax(scale * a[0:n]); a[n:T] = 0.
template <class R>
inline void softmax_row(R* a, int n, int T, R scale) {
  R mx = -std::numeric_limits<R>::infinity();
#pragma omp simd reduction(max : mx)
  for (int j = 0; j < n; ++j) {
    a[j] *= scale;
    mx = a[j] > mx ? a[j] : mx;
  }
  R sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < n; ++j) {
    const R e = vec_exp(a[j] - mx);
    a[j] = e;
    sum += e;
  }
  const R inv = R(1) / sum;
#pragma omp simd
  for (int j = 0; j < n; ++j) a[j] *= inv;
  for (int j = n; j < T; ++j) a[j] = R(0);
}

// g[0:n] = scale * a (g - <a, g>) (softmax backward, datt -> dpreatt); g[n:band_end] = 0.
template <class R>
inline void softmax_backward_row(R* g, const R* a, int n, int band_end, R scale) {
  R dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int j = 0; j < n; ++j) dot += a[j] * g[j];
#pragma omp simd
  for (int j = 0; j < n; ++j) g[j] = a[j] * (g[j] - dot) * scale;
  for (int j = n; j < band_end; ++j) g[j] = R(0);
}

}  // namespace

template <class Real>
void attention_forward(Real* out, Real* att, const Real* qkv, int B, int T, int C, int NH,
                       int NKV) {
  const int hs = C / NH;
  const int group = NH / NKV;  // query heads per kv head
  const size_t kv_width = static_cast<size_t>(NKV) * hs;
  const size_t ld = C + 2 * kv_width;  // row stride of q, k and v
  const size_t ldo = static_cast<size_t>(C);
  const size_t TT = static_cast<size_t>(T);
  const Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(hs)));
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const Real* row0 = qkv + static_cast<size_t>(b) * TT * ld;
      const Real* q = row0 + static_cast<size_t>(h) * hs;
      const Real* k = row0 + C + static_cast<size_t>(h / group) * hs;
      const Real* v = k + kv_width;
      Real* a_bh = att + (static_cast<size_t>(b) * NH + h) * TT * TT;
      Real* o = out + static_cast<size_t>(b) * TT * ldo + static_cast<size_t>(h) * hs;
      int t0 = 0;
      for (; t0 + kTile <= T; t0 += kTile) {  // rows t0..t0+3 need keys 0..t0+3
        Real* a = a_bh + t0 * TT;
        Real* ot = o + t0 * ldo;
        for (int s = 0; s < t0 + kTile; s += kTile) {
          dot_4x4(a + s, TT, q + t0 * ld, ld, k + s * ld, ld, hs);
        }
        for (int i = 0; i < kTile; ++i) {
          softmax_row(a + i * TT, t0 + i + 1, T, scale);
          for (int d = 0; d < hs; ++d) ot[i * ldo + d] = Real(0);
        }
        for (int s = 0; s < t0 + kTile; s += kTile) {
          axpy_4x4(ot, ldo, a + s, TT, 1, v + s * ld, ld, hs);
        }
      }
      for (int t = t0; t < T; ++t) {
        Real* a = a_bh + t * TT;
        Real* ot = o + t * ldo;
        dot_row(a, q + t * ld, k, ld, t + 1, hs);
        softmax_row(a, t + 1, T, scale);
        for (int d = 0; d < hs; ++d) ot[d] = Real(0);
        axpy_row(ot, a, v, ld, t + 1, hs);
      }
    }
  }
}

// attention_backward's operands and sizes, and its two passes (see the top of the file). Each
// pass is one omp for, to be called inside a parallel region; the column pass reads every
// head's scratch, so it must follow the row pass's implicit barrier.
template <class Real>
struct AttentionBackward {
  Real* dqkv;
  Real* scratch;
  const Real* dout;
  const Real* qkv;
  const Real* att;
  int B, T, C, NH, NKV;
  int hs = C / NH;
  int group = NH / NKV;  // query heads per kv head
  size_t kv_width = static_cast<size_t>(NKV) * hs;
  size_t ld = C + 2 * kv_width;  // row stride of q, k and v
  size_t ldo = static_cast<size_t>(C);
  size_t TT = static_cast<size_t>(T);
  Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(hs)));
  int nblocks = (T + kColBlock - 1) / kColBlock;

  // End of the 16-column block containing column t (where row t's zeroed scratch ends).
  int band_end(int t) const { return std::min(T, (t / kColBlock + 1) * kColBlock); }
  void rows() const;
  void columns() const;
};

// Rows t of head h: datt = dout_t . v_s; dpre = softmax backward (into scratch);
// dq_t += dpre k.
template <class Real>
void AttentionBackward<Real>::rows() const {
#pragma omp for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const size_t row0 = static_cast<size_t>(b) * TT * ld;
      const Real* k = qkv + row0 + C + static_cast<size_t>(h / group) * hs;
      const Real* v = k + kv_width;
      Real* dq = dqkv + row0 + static_cast<size_t>(h) * hs;
      const Real* a_bh = att + (static_cast<size_t>(b) * NH + h) * TT * TT;
      Real* g_bh = scratch + (static_cast<size_t>(b) * NH + h) * TT * TT;
      const Real* go = dout + static_cast<size_t>(b) * TT * ldo + static_cast<size_t>(h) * hs;
      int t0 = 0;
      for (; t0 + kTile <= T; t0 += kTile) {
        Real* g = g_bh + t0 * TT;
        for (int s = 0; s < t0 + kTile; s += kTile) {
          dot_4x4(g + s, TT, go + t0 * ldo, ldo, v + s * ld, ld, hs);
        }
        for (int i = 0; i < kTile; ++i) {
          softmax_backward_row(g + i * TT, a_bh + (t0 + i) * TT, t0 + i + 1, band_end(t0 + i),
                               scale);
        }
        for (int s = 0; s < t0 + kTile; s += kTile) {
          axpy_4x4(dq + t0 * ld, ld, g + s, TT, 1, k + s * ld, ld, hs);
        }
      }
      for (int t = t0; t < T; ++t) {
        Real* g = g_bh + t * TT;
        dot_row(g, go + t * ldo, v, ld, t + 1, hs);
        softmax_backward_row(g, a_bh + t * TT, t + 1, band_end(t), scale);
        axpy_row(dq + t * ld, g, k, ld, t + 1, hs);
      }
    }
  }
}

// Columns s of kv head kv, keys [sb, se): dk_s += sum_h sum_{t>=s} dpre_h[t,s] q_h,t and
// dv_s += sum_h sum_{t>=s} att_h[t,s] dout_h,t over the group's query heads h in order, by
// blocks of 16 key columns (the 4 cache lines a tile reads serve the whole block).
template <class Real>
void AttentionBackward<Real>::columns() const {
#pragma omp for collapse(3) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int kv = 0; kv < NKV; ++kv) {
      for (int blk = 0; blk < nblocks; ++blk) {
        const size_t row0 = static_cast<size_t>(b) * TT * ld;
        Real* dk = dqkv + row0 + C + static_cast<size_t>(kv) * hs;
        Real* dv = dk + kv_width;
        const int sb = blk * kColBlock;
        const int se = std::min(T, sb + kColBlock);
        const int se4 = sb + (se - sb) / kTile * kTile;  // end of the full 4-key groups
        for (int h = kv * group; h < (kv + 1) * group; ++h) {
          const Real* q = qkv + row0 + static_cast<size_t>(h) * hs;
          const Real* a_bh = att + (static_cast<size_t>(b) * NH + h) * TT * TT;
          const Real* g_bh = scratch + (static_cast<size_t>(b) * NH + h) * TT * TT;
          const Real* go = dout + static_cast<size_t>(b) * TT * ldo + static_cast<size_t>(h) * hs;
          int t = sb;
          for (; t + kTile <= T; t += kTile) {
            const Real* qt = q + t * ld;
            const Real* got = go + t * ldo;
            for (int s0 = sb; s0 < se4 && s0 <= t; s0 += kTile) {
              axpy_4x4(dk + s0 * ld, ld, g_bh + t * TT + s0, 1, TT, qt, ld, hs);
              axpy_4x4(dv + s0 * ld, ld, a_bh + t * TT + s0, 1, TT, got, ldo, hs);
            }
            for (int s = se4; s < se; ++s) {  // keys of a last, partial group
              for (int j = std::max(0, s - t); j < kTile; ++j) {
                const size_t at = (t + j) * TT + s;
                axpy_1(dk + s * ld, g_bh[at], qt + j * ld, hs);
                axpy_1(dv + s * ld, a_bh[at], got + j * ldo, hs);
              }
            }
          }
          for (; t < T; ++t) {  // rows left over after the 4-row groups
            for (int s = sb; s < se && s <= t; ++s) {
              const size_t at = t * TT + s;
              axpy_1(dk + s * ld, g_bh[at], q + t * ld, hs);
              axpy_1(dv + s * ld, a_bh[at], go + t * ldo, hs);
            }
          }
        }
      }
    }
  }
}

size_t attention_saved_size(int B, int T, int NH) {
  return static_cast<size_t>(B) * NH * static_cast<size_t>(T) * T;
}

size_t attention_scratch_size(int B, int T, int NH) {
  return attention_saved_size(B, T, NH);
}

template <class Real>
void attention_backward(Real* dqkv, Real* scratch, const Real* dout, const Real* qkv,
                        const Real* /*out*/, const Real* att, int B, int T, int C, int NH,
                        int NKV) {
  const AttentionBackward<Real> pass{dqkv, scratch, dout, qkv, att, B, T, C, NH, NKV};
#pragma omp parallel
  {
    pass.rows();
    // (implicit barrier at the end of rows()' omp for: the column pass reads every head's
    // scratch)
    pass.columns();
  }
}

template void attention_forward<float>(float*, float*, const float*, int, int, int, int, int);
template void attention_forward<double>(double*, double*, const double*, int, int, int, int, int);
template void attention_backward<float>(float*, float*, const float*, const float*, const float*,
                                        const float*, int, int, int, int, int);
template void attention_backward<double>(double*, double*, const double*, const double*,
                                         const double*, const double*, int, int, int, int, int);

}  // namespace gossamer::kernels::cpu
