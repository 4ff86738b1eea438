// Implementation of sparse_select.h. top_k_indices: the k-th largest value by nth_element on a
// copy (NaN as -inf), then one pass in index order takes every index above it and, while some
// are still missing, those equal to it.
#include "kernels/cpu/sparse_select.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "core/error.h"

namespace gossamer::kernels::cpu {

namespace {
constexpr size_t kParallelMin = size_t{1} << 15;  // elements below which we stay serial
}  // namespace

template <class T>
void top_k_indices(const T* scores, size_t n, size_t k, uint32_t* out) {
  GOSSAMER_CHECK(k <= n && n <= size_t{0xffffffffu},
                 "top-k: k = %zu of %zu scores (k <= n < 2^32 required)", k, n);
  if (k == 0) return;
  if (k == n) {
    for (size_t i = 0; i < n; ++i) out[i] = uint32_t(i);
    return;
  }
  constexpr T kLowest = -std::numeric_limits<T>::infinity();
  std::vector<T> v(scores, scores + n);
  for (T& x : v)
    if (x != x) x = kLowest;
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(k - 1), v.end(), std::greater<T>());
  const T threshold = v[k - 1];
  size_t above = 0;
  for (size_t i = 0; i < n; ++i) above += scores[i] > threshold;
  size_t ties_left = k - above, j = 0;
  for (size_t i = 0; i < n; ++i) {
    const T x = scores[i] != scores[i] ? kLowest : scores[i];
    if (x > threshold || (x == threshold && ties_left > 0 && ties_left--)) out[j++] = uint32_t(i);
  }
}

template <class T>
void gather(T* out, const T* x, const uint32_t* idx, size_t k) {
#pragma omp parallel for schedule(static) if (k >= kParallelMin)
  for (size_t j = 0; j < k; ++j) out[j] = x[idx[j]];
}

template <class T>
void scatter(T* x, const T* in, const uint32_t* idx, size_t k) {
#pragma omp parallel for schedule(static) if (k >= kParallelMin)
  for (size_t j = 0; j < k; ++j) x[idx[j]] = in[j];
}

template <class T>
void scale_at(T* x, const uint32_t* idx, size_t k, T s) {
#pragma omp parallel for schedule(static) if (k >= kParallelMin)
  for (size_t j = 0; j < k; ++j) x[idx[j]] = s == T(0) ? T(0) : s * x[idx[j]];
}

template void top_k_indices<float>(const float*, size_t, size_t, uint32_t*);
template void top_k_indices<double>(const double*, size_t, size_t, uint32_t*);
template void gather<float>(float*, const float*, const uint32_t*, size_t);
template void gather<double>(double*, const double*, const uint32_t*, size_t);
template void scatter<float>(float*, const float*, const uint32_t*, size_t);
template void scatter<double>(double*, const double*, const uint32_t*, size_t);
template void scale_at<float>(float*, const uint32_t*, size_t, float);
template void scale_at<double>(double*, const uint32_t*, size_t, double);

}  // namespace gossamer::kernels::cpu
