// Implementation of mask_score.h: one OpenMP loop each.
#include "kernels/cpu/mask_score.h"

#include <algorithm>
#include <cmath>

namespace gossamer::kernels::cpu {

template <class T>
void mask_score(T* out, T a, const T* x, T b, const T* y, size_t n) {
  if (y == nullptr) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) out[i] = std::fabs(a * x[i]);
    return;
  }
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) out[i] = std::fabs(a * x[i] + b * y[i]);
}

template <class T>
void age_bonus(T* scores, const float* last, T k, T now, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) scores[i] *= T(1) + k * std::max(T(0), now - T(last[i]));
}

template void mask_score<float>(float*, float, const float*, float, const float*, size_t);
template void mask_score<double>(double*, double, const double*, double, const double*, size_t);
template void age_bonus<float>(float*, const float*, float, float, size_t);
template void age_bonus<double>(double*, const float*, double, double, size_t);

}  // namespace gossamer::kernels::cpu
