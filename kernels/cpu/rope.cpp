// Rotary position embedding, Hugging Face rotate_half convention, see rope.h.
// Work is split by position t: each work item computes the cos/sin table of its position once
// (in double, rounded to the element type) and applies it to every batch row and head at that
// position. No reductions, so the result does not depend on the thread count. The backward applies
// the transposed rotation (angle -> -angle) with the same table.
#include "kernels/cpu/rope.h"

#include <cmath>
#include <cstddef>
#include <vector>

namespace gossamer::kernels::cpu {

namespace {

// dir = +1: rotate by +angle (forward); dir = -1: by -angle (backward).
template <class Real>
void rope_apply(Real* x, int B, int T, int n_heads, int hs, int row_stride, double theta, int dir) {
  const int half = hs / 2;
  std::vector<double> inv_freq(half);
  for (int i = 0; i < half; ++i) inv_freq[i] = std::pow(theta, -2.0 * i / hs);
#pragma omp parallel
  {
    std::vector<Real> cos_t(half), sin_t(half);
#pragma omp for schedule(static)
    for (int t = 0; t < T; ++t) {
      for (int i = 0; i < half; ++i) {
        const double angle = static_cast<double>(t) * inv_freq[i];
        cos_t[i] = static_cast<Real>(std::cos(angle));
        sin_t[i] = static_cast<Real>(dir * std::sin(angle));
      }
      const Real* __restrict__ c = cos_t.data();
      const Real* __restrict__ s = sin_t.data();
      for (int b = 0; b < B; ++b) {
        Real* row = x + (static_cast<size_t>(b) * T + t) * static_cast<size_t>(row_stride);
        for (int h = 0; h < n_heads; ++h) {
          Real* __restrict__ lo = row + static_cast<size_t>(h) * hs;
          Real* __restrict__ hi = lo + half;
#pragma omp simd
          for (int i = 0; i < half; ++i) {
            const Real a = lo[i], b2 = hi[i];
            lo[i] = a * c[i] - b2 * s[i];
            hi[i] = b2 * c[i] + a * s[i];
          }
        }
      }
    }
  }
}

}  // namespace

template <class Real>
void rope_forward(Real* x, int B, int T, int n_heads, int head_dim, int row_stride, double theta) {
  rope_apply(x, B, T, n_heads, head_dim, row_stride, theta, +1);
}

template <class Real>
void rope_backward(Real* dx, int B, int T, int n_heads, int head_dim, int row_stride,
                   double theta) {
  rope_apply(dx, B, T, n_heads, head_dim, row_stride, theta, -1);
}

template void rope_forward<float>(float*, int, int, int, int, int, double);
template void rope_forward<double>(double*, int, int, int, int, int, double);
template void rope_backward<float>(float*, int, int, int, int, int, double);
template void rope_backward<double>(double*, int, int, int, int, int, double);

}  // namespace gossamer::kernels::cpu
