// GELU, tanh approximation (GPT-2 "gelu_new"), see gelu.h.
// Evaluated through the identity 0.5 (1 + tanh(u)) = sigmoid(2u) = 1 / (1 + exp(-2u)), which is
// the header's formula without the cancellation of 1 + tanh(u) for u << 0 and vectorises with
// vec_exp. With sg = sigmoid(2u):  y = x sg,  y' = sg + 2 x sg (1 - sg) u'(x).
// exp's argument is capped at 80 so that e = exp(-2u) stays finite and 1 - sg = e sg never
// becomes inf * 0; for x < -9.5 (where the cap bites) y and y' are below 1e-33 either way.
#include "kernels/cpu/gelu.h"

#include <cstddef>

#include "kernels/cpu/vec_math.h"

namespace gossamer::kernels::cpu {

namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
constexpr size_t kParallelMin = size_t{1} << 14;  // below this, threads cost more than they save

// exp(-2u) for u = sqrt(2/pi) (x + 0.044715 x^3), argument capped at 80
template <class T>
inline T gelu_exp(T x) {
  const T u = T(kSqrt2OverPi) * (x + T(kCubic) * x * x * x);
  T a = T(-2) * u;
  a = a > T(80) ? T(80) : a;
  return vec_exp(a);
}

}  // namespace

template <class T>
void gelu_forward(T* out, const T* inp, size_t n) {
  // out may alias inp: each element is read before it is written, at the same index.
#pragma omp parallel for simd simdlen(kVecLanes <T>) schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) {
    const T x = inp[i];
    out[i] = x / (T(1) + gelu_exp(x));
  }
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, size_t n) {
#pragma omp parallel for simd simdlen(kVecLanes <T>) schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) {
    const T x = inp[i];
    const T e = gelu_exp(x);
    const T sg = T(1) / (T(1) + e);  // sigmoid(2u); 1 - sg = e sg without cancellation
    const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * x * x);
    dinp[i] += dout[i] * (sg + T(2) * x * sg * (e * sg) * du);
  }
}

template void gelu_forward<float>(float*, const float*, size_t);
template void gelu_forward<double>(double*, const double*, size_t);
template void gelu_backward<float>(float*, const float*, const float*, size_t);
template void gelu_backward<double>(double*, const double*, const double*, size_t);

}  // namespace gossamer::kernels::cpu
