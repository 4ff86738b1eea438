// LayerNorm over the last dimension (GPT-2), see layernorm.h.
// Row statistics are accumulated in double (two passes: mean, then the biased variance of the
// centred values), so float and double agree to float rounding. The backward computes dinp row
// by row; dw/db are sums over rows, reduced deterministically by giving each thread a fixed
// slice of channels that it sums over all rows in row order (no atomics, no scratch), so the
// result does not depend on the thread count either.
#include "kernels/cpu/layernorm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace gossamer::kernels::cpu {

namespace {
constexpr int kChannelBlock = 64;  // channels per work item of the dw/db reduction
}  // namespace

template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* w, const T* b, int N,
                       int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* __restrict__ x = inp + static_cast<size_t>(n) * C;
    T* __restrict__ o = out + static_cast<size_t>(n) * C;
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < C; ++c) sum += x[c];
    const T m = static_cast<T>(sum / C);
    double sq = 0.0;
#pragma omp simd reduction(+ : sq)
    for (int c = 0; c < C; ++c) {
      const double d = static_cast<double>(x[c] - m);
      sq += d * d;
    }
    const T s = static_cast<T>(1.0 / std::sqrt(sq / C + kLayerNormEps));
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * w[c] + b[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

template <class T>
void layernorm_backward(T* dinp, T* dw, T* db, const T* dout, const T* inp, const T* w,
                        const T* mean, const T* rstd, int N, int C) {
  const int nblocks = (C + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; ++n) {
      const T* __restrict__ x = inp + static_cast<size_t>(n) * C;
      const T* __restrict__ g = dout + static_cast<size_t>(n) * C;
      T* __restrict__ dx = dinp + static_cast<size_t>(n) * C;
      const T m = mean[n];
      const T s = rstd[n];
      // dnorm = g * w;  dx += s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
      double sum_dn = 0.0, sum_dn_norm = 0.0;
#pragma omp simd reduction(+ : sum_dn, sum_dn_norm)
      for (int c = 0; c < C; ++c) {
        const T dn = g[c] * w[c];
        sum_dn += dn;
        sum_dn_norm += dn * ((x[c] - m) * s);
      }
      const T mean_dn = static_cast<T>(sum_dn / C);
      const T mean_dn_norm = static_cast<T>(sum_dn_norm / C);
#pragma omp simd
      for (int c = 0; c < C; ++c) {
        const T norm = (x[c] - m) * s;
        dx[c] += s * (g[c] * w[c] - mean_dn - norm * mean_dn_norm);
      }
    }
    // dinp rows and dw/db channel blocks are disjoint outputs: no barrier needed between them.
#pragma omp for schedule(static)
    for (int blk = 0; blk < nblocks; ++blk) {
      const int c0 = blk * kChannelBlock;
      const int nc = std::min(kChannelBlock, C - c0);
      T* __restrict__ dwb = dw + c0;
      T* __restrict__ dbb = db + c0;
      for (int n = 0; n < N; ++n) {
        const T* __restrict__ x = inp + static_cast<size_t>(n) * C + c0;
        const T* __restrict__ g = dout + static_cast<size_t>(n) * C + c0;
        const T m = mean[n];
        const T s = rstd[n];
#pragma omp simd
        for (int c = 0; c < nc; ++c) {
          dwb[c] += g[c] * ((x[c] - m) * s);
          dbb[c] += g[c];
        }
      }
    }
  }
}

template void layernorm_forward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, int, int);
template void layernorm_forward<double>(double*, double*, double*, const double*, const double*,
                                        const double*, int, int);
template void layernorm_backward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, int, int);
template void layernorm_backward<double>(double*, double*, double*, const double*, const double*,
                                         const double*, const double*, const double*, int, int);

}  // namespace gossamer::kernels::cpu
