// CPU AdamW update: one fused, vectorised pass over param, grad, m, v.
#include "kernels/cpu/adamw.h"

#include <cmath>

namespace gossamer::kernels::cpu {

template <class T>
void adamw_update(T* param, const T* grad, T* m, T* v, size_t n, const AdamStep& hp) {
  const T b1 = hp.beta1, b2 = hp.beta2;
  const T bc1 = T(1) - static_cast<T>(std::pow(double(hp.beta1), double(hp.t)));
  const T bc2 = T(1) - static_cast<T>(std::pow(double(hp.beta2), double(hp.t)));
  const T step_size = T(hp.lr) / bc1;
  const T inv_sqrt_bc2 = T(1) / std::sqrt(bc2);
  const T decay = T(1) - T(hp.lr) * T(hp.weight_decay);
  const T e = hp.eps;
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) {
    const T g = grad[i];
    const T mi = b1 * m[i] + (T(1) - b1) * g;
    const T vi = b2 * v[i] + (T(1) - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + e);
  }
}

template void adamw_update<float>(float*, const float*, float*, float*, size_t, const AdamStep&);
template void adamw_update<double>(double*, const double*, double*, double*, size_t,
                                   const AdamStep&);

}  // namespace gossamer::kernels::cpu
