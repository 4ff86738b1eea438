// RMSNorm over the last dimension (Llama), see rmsnorm.h.
// The mean square is accumulated in double, so float and double agree to float rounding.
// With xhat = inp * rstd and dn = dout * w, the backward is
//   dinp = rstd * (dn - xhat * mean_c(dn * xhat)),   dw = sum_n dout * xhat.
// dinp is computed row by row; dw is a sum over rows, reduced deterministically by giving each
// thread a fixed slice of channels that it sums over all rows in row order (no atomics), so the
// result does not depend on the thread count.
#include "kernels/cpu/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace gossamer::kernels::cpu {

namespace {
constexpr int kChannelBlock = 64;  // channels per work item of the dw reduction
}  // namespace

template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* w, int N, int C, double eps) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* __restrict__ x = inp + static_cast<size_t>(n) * C;
    T* __restrict__ o = out + static_cast<size_t>(n) * C;
    double sq = 0.0;
#pragma omp simd reduction(+ : sq)
    for (int c = 0; c < C; ++c) sq += static_cast<double>(x[c]) * static_cast<double>(x[c]);
    const T s = static_cast<T>(1.0 / std::sqrt(sq / C + eps));
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = x[c] * s * w[c];
    rstd[n] = s;
  }
}

template <class T>
void rmsnorm_backward(T* dinp, T* dw, const T* dout, const T* inp, const T* w, const T* rstd, int N,
                      int C) {
  const int nblocks = (C + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; ++n) {
      const T* __restrict__ x = inp + static_cast<size_t>(n) * C;
      const T* __restrict__ g = dout + static_cast<size_t>(n) * C;
      T* __restrict__ dx = dinp + static_cast<size_t>(n) * C;
      const T s = rstd[n];
      double sum_dn_xhat = 0.0;
#pragma omp simd reduction(+ : sum_dn_xhat)
      for (int c = 0; c < C; ++c) sum_dn_xhat += g[c] * w[c] * (x[c] * s);
      const T mean_dn_xhat = static_cast<T>(sum_dn_xhat / C);
#pragma omp simd
      for (int c = 0; c < C; ++c) dx[c] += s * (g[c] * w[c] - (x[c] * s) * mean_dn_xhat);
    }
    // dinp rows and dw channel blocks are disjoint outputs: no barrier needed between them.
#pragma omp for schedule(static)
    for (int blk = 0; blk < nblocks; ++blk) {
      const int c0 = blk * kChannelBlock;
      const int nc = std::min(kChannelBlock, C - c0);
      T* __restrict__ dwb = dw + c0;
      for (int n = 0; n < N; ++n) {
        const T* __restrict__ x = inp + static_cast<size_t>(n) * C + c0;
        const T* __restrict__ g = dout + static_cast<size_t>(n) * C + c0;
        const T s = rstd[n];
#pragma omp simd
        for (int c = 0; c < nc; ++c) dwb[c] += g[c] * (x[c] * s);
      }
    }
  }
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int, int, double);
template void rmsnorm_forward<double>(double*, double*, const double*, const double*, int, int,
                                      double);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*,
                                      const float*, int, int);
template void rmsnorm_backward<double>(double*, double*, const double*, const double*,
                                       const double*, const double*, int, int);

}  // namespace gossamer::kernels::cpu
