// SwiGLU (Llama MLP activation), see swiglu.h.
// sigmoid(x) = 1 / (1 + e) with e = exp(-x), vectorised with vec_exp; silu'(x) = sg + x sg (1 -
// sg) with 1 - sg = e sg (no cancellation for x >> 0). exp's argument is capped at 80 so that
// e stays finite and e sg never becomes inf * 0; for x < -80 (where the cap bites) silu and
// silu' are below 1e-33 either way. Rows are independent: no reductions, thread-count
// independent results.
#include "kernels/cpu/swiglu.h"

#include <cstddef>

#include "kernels/cpu/vec_math.h"

namespace gossamer::kernels::cpu {

namespace {

template <class T>
inline T silu_exp(T x) {  // exp(-x), argument capped at 80
  T a = -x;
  a = a > T(80) ? T(80) : a;
  return vec_exp(a);
}

}  // namespace

template <class T>
void swiglu_forward(T* out, const T* inp, int N, int F) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* __restrict__ gate = inp + static_cast<size_t>(n) * 2 * F;
    const T* __restrict__ up = gate + F;
    T* __restrict__ o = out + static_cast<size_t>(n) * F;
#pragma omp simd simdlen(kVecLanes <T>)
    for (int f = 0; f < F; ++f) {
      const T x = gate[f];
      o[f] = x / (T(1) + silu_exp(x)) * up[f];
    }
  }
}

template <class T>
void swiglu_backward(T* dinp, const T* dout, const T* inp, int N, int F) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* __restrict__ gate = inp + static_cast<size_t>(n) * 2 * F;
    const T* __restrict__ up = gate + F;
    const T* __restrict__ g = dout + static_cast<size_t>(n) * F;
    T* __restrict__ dgate = dinp + static_cast<size_t>(n) * 2 * F;
    T* __restrict__ dup = dgate + F;
#pragma omp simd simdlen(kVecLanes <T>)
    for (int f = 0; f < F; ++f) {
      const T x = gate[f];
      const T e = silu_exp(x);
      const T sg = T(1) / (T(1) + e);
      dgate[f] += g[f] * up[f] * (sg + x * sg * (e * sg));
      dup[f] += g[f] * (x * sg);
    }
  }
}

template void swiglu_forward<float>(float*, const float*, int, int);
template void swiglu_forward<double>(double*, const double*, int, int);
template void swiglu_backward<float>(float*, const float*, const float*, int, int);
template void swiglu_backward<double>(double*, const double*, const double*, int, int);

}  // namespace gossamer::kernels::cpu
