// Causal multi-head self-attention (GPT-2), see attention.h.
// One work item per (b, h): it reads only head h of batch b and writes only att[b,h], out's
// head-h columns of batch b and dqkv's head-h q/k/v columns of batch b, so items never share an
// output and every sum runs in a fixed order (results do not depend on the thread count).
// The products are register-blocked loops over contiguous head rows (4 rows of k or v per
// step, so each q/out row is loaded and stored once per 4 keys); the backward's dk and dv are
// summed per key row over the column of scratch/att, for the same reason.
// The backward stores dpreatt * scale in scratch[b,h,t,s] for s <= t only; entries s > t are
// neither written nor read.
#include "kernels/cpu/attention.h"

#include <cmath>
#include <cstddef>
#include <limits>

#include "kernels/cpu/vec_math.h"

namespace gossamer::kernels::cpu {

namespace {

// r[i] = x . y_i for the 4 rows y_i = y + i*ld, i < 4, over n elements.
template <class R>
inline void dot4(R* r, const R* __restrict__ x, const R* __restrict__ y, size_t ld, int n) {
  const R* __restrict__ y0 = y;
  const R* __restrict__ y1 = y + ld;
  const R* __restrict__ y2 = y + 2 * ld;
  const R* __restrict__ y3 = y + 3 * ld;
  R a0 = 0, a1 = 0, a2 = 0, a3 = 0;
#pragma omp simd reduction(+ : a0, a1, a2, a3)
  for (int d = 0; d < n; ++d) {
    a0 += x[d] * y0[d];
    a1 += x[d] * y1[d];
    a2 += x[d] * y2[d];
    a3 += x[d] * y3[d];
  }
  r[0] = a0;
  r[1] = a1;
  r[2] = a2;
  r[3] = a3;
}

template <class R>
inline R dot1(const R* __restrict__ x, const R* __restrict__ y, int n) {
  R a = 0;
#pragma omp simd reduction(+ : a)
  for (int d = 0; d < n; ++d) a += x[d] * y[d];
  return a;
}

// acc[0:n] += sum_i c[i] * x_i[0:n] for the 4 rows x_i = x + i*ld.
template <class R>
inline void axpy4(R* __restrict__ acc, const R* c, const R* __restrict__ x, size_t ld, int n) {
  const R* __restrict__ x0 = x;
  const R* __restrict__ x1 = x + ld;
  const R* __restrict__ x2 = x + 2 * ld;
  const R* __restrict__ x3 = x + 3 * ld;
  const R c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
#pragma omp simd
  for (int d = 0; d < n; ++d) acc[d] += c0 * x0[d] + c1 * x1[d] + c2 * x2[d] + c3 * x3[d];
}

template <class R>
inline void axpy1(R* __restrict__ acc, R c, const R* __restrict__ x, int n) {
#pragma omp simd
  for (int d = 0; d < n; ++d) acc[d] += c * x[d];
}

}  // namespace

template <class Real>
void attention_forward(Real* out, Real* att, const Real* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const size_t ld = 3 * static_cast<size_t>(C);  // row stride of q, k and v
  const Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(hs)));
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const Real* q = qkv + static_cast<size_t>(b) * T * ld + static_cast<size_t>(h) * hs;
      const Real* k = q + C;
      const Real* v = q + 2 * static_cast<size_t>(C);
      Real* a_bh = att + (static_cast<size_t>(b) * NH + h) * T * T;
      Real* o = out + static_cast<size_t>(b) * T * C + static_cast<size_t>(h) * hs;
      for (int t = 0; t < T; ++t) {
        const Real* qt = q + t * ld;
        Real* a = a_bh + static_cast<size_t>(t) * T;
        const int n = t + 1;  // keys s <= t
        int s = 0;
        for (; s + 4 <= n; s += 4) dot4(a + s, qt, k + s * ld, ld, hs);
        for (; s < n; ++s) a[s] = dot1(qt, k + s * ld, hs);
        Real mx = -std::numeric_limits<Real>::infinity();
#pragma omp simd reduction(max : mx)
        for (int j = 0; j < n; ++j) {
          a[j] *= scale;
          mx = a[j] > mx ? a[j] : mx;
        }
        Real sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < n; ++j) {
          const Real e = vec_exp(a[j] - mx);
          a[j] = e;
          sum += e;
        }
        const Real inv = Real(1) / sum;
#pragma omp simd
        for (int j = 0; j < n; ++j) a[j] *= inv;
        for (int j = n; j < T; ++j) a[j] = Real(0);
        Real* ot = o + static_cast<size_t>(t) * C;
        for (int d = 0; d < hs; ++d) ot[d] = Real(0);
        for (s = 0; s + 4 <= n; s += 4) axpy4(ot, a + s, v + s * ld, ld, hs);
        for (; s < n; ++s) axpy1(ot, a[s], v + s * ld, hs);
      }
    }
  }
}

template <class Real>
void attention_backward(Real* dqkv, Real* scratch, const Real* dout, const Real* qkv,
                        const Real* att, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const size_t ld = 3 * static_cast<size_t>(C);
  const Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(hs)));
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const size_t head = static_cast<size_t>(b) * T * ld + static_cast<size_t>(h) * hs;
      const Real* q = qkv + head;
      const Real* k = q + C;
      const Real* v = q + 2 * static_cast<size_t>(C);
      Real* dq = dqkv + head;
      Real* dk = dq + C;
      Real* dv = dq + 2 * static_cast<size_t>(C);
      const Real* a_bh = att + (static_cast<size_t>(b) * NH + h) * T * T;
      Real* g_bh = scratch + (static_cast<size_t>(b) * NH + h) * T * T;
      const Real* go = dout + static_cast<size_t>(b) * T * C + static_cast<size_t>(h) * hs;
      // Rows t: datt = dout_t . v_s, softmax backward, dq_t += sum_s dpre[t,s] k_s.
      for (int t = 0; t < T; ++t) {
        const Real* a = a_bh + static_cast<size_t>(t) * T;
        Real* g = g_bh + static_cast<size_t>(t) * T;
        const Real* got = go + static_cast<size_t>(t) * C;
        const int n = t + 1;
        int s = 0;
        for (; s + 4 <= n; s += 4) dot4(g + s, got, v + s * ld, ld, hs);
        for (; s < n; ++s) g[s] = dot1(got, v + s * ld, hs);
        Real dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int j = 0; j < n; ++j) dot += a[j] * g[j];
#pragma omp simd
        for (int j = 0; j < n; ++j) g[j] = a[j] * (g[j] - dot) * scale;
        Real* dqt = dq + t * ld;
        for (s = 0; s + 4 <= n; s += 4) axpy4(dqt, g + s, k + s * ld, ld, hs);
        for (; s < n; ++s) axpy1(dqt, g[s], k + s * ld, hs);
      }
      // Columns s: dk_s += sum_{t>=s} dpre[t,s] q_t, dv_s += sum_{t>=s} att[t,s] dout_t.
      for (int s = 0; s < T; ++s) {
        Real* dks = dk + s * ld;
        Real* dvs = dv + s * ld;
        int t = s;
        for (; t + 4 <= T; t += 4) {
          const size_t col = static_cast<size_t>(t) * T + s;
          const Real cg[4] = {g_bh[col], g_bh[col + T], g_bh[col + 2 * T], g_bh[col + 3 * T]};
          const Real ca[4] = {a_bh[col], a_bh[col + T], a_bh[col + 2 * T], a_bh[col + 3 * T]};
          axpy4(dks, cg, q + t * ld, ld, hs);
          axpy4(dvs, ca, go + static_cast<size_t>(t) * C, C, hs);
        }
        for (; t < T; ++t) {
          const size_t col = static_cast<size_t>(t) * T + s;
          axpy1(dks, g_bh[col], q + t * ld, hs);
          axpy1(dvs, a_bh[col], go + static_cast<size_t>(t) * C, hs);
        }
      }
    }
  }
}

template void attention_forward<float>(float*, float*, const float*, int, int, int, int);
template void attention_forward<double>(double*, double*, const double*, int, int, int, int);
template void attention_backward<float>(float*, float*, const float*, const float*, const float*,
                                        int, int, int, int);
template void attention_backward<double>(double*, double*, const double*, const double*,
                                         const double*, int, int, int, int);

}  // namespace gossamer::kernels::cpu
