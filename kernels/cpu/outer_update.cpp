// Implementation of outer_update.h: one parallel loop (serial below 32K elements).
#include "kernels/cpu/outer_update.h"

namespace gossamer::kernels::cpu {

template <class T>
void nesterov_outer(T* anchor, T* m, const T* delta, T lr, T mu, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= (size_t{1} << 15))
  for (size_t i = 0; i < n; ++i) {
    m[i] = mu * m[i] + delta[i];
    anchor[i] -= lr * (delta[i] + mu * m[i]);
  }
}

template void nesterov_outer<float>(float*, float*, const float*, float, float, size_t);
template void nesterov_outer<double>(double*, double*, const double*, double, double, size_t);

}  // namespace gossamer::kernels::cpu
