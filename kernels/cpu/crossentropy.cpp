// Fused softmax + cross-entropy over a padded vocabulary, see crossentropy.h.
// Forward, per row: one pass for the max, one pass writing exp(x - max) (vec_exp, vectorised)
// while summing (blocks of 512 in T, block sums in double), one pass scaling by 1/sum and zeroing
// the padding. The loss is log(sum) - (x_target - max), read before the row is overwritten (probs
// may alias logits); it stays finite even where probs[target] underflows to 0. Backward: p[target]
// is read before the row is written (dlogits may alias probs). forward_backward: forward's first
// two passes, then one pass writing scale * (e / sum), the same products as forward's
// normalisation followed by backward (the same bits). Rows are independent and split between
// threads, so results do not depend on thread count.
#include "kernels/cpu/crossentropy.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "kernels/cpu/vec_math.h"

namespace gossamer::kernels::cpu {

namespace {

constexpr int kSumBlock = 512;

// max of x[0..V).
template <class T>
T row_max(const T* x, int V) {
  T mx = -std::numeric_limits<T>::infinity();
#pragma omp simd simdlen(kVecLanes <T>) reduction(max : mx)
  for (int j = 0; j < V; ++j) mx = x[j] > mx ? x[j] : mx;
  return mx;
}

// p[j] = exp(x[j] - mx) for j < V; returns the sum. p may alias x.
// Sums blocks of kSumBlock in T (vectorised; GCC 12 does not vectorise a double accumulator
// over float terms in an `omp simd` loop) and adds the block sums in double.
template <class T>
double exp_row(T* p, const T* x, T mx, int V) {
  double sum = 0.0;
  for (int j0 = 0; j0 < V; j0 += kSumBlock) {
    const int j1 = std::min(V, j0 + kSumBlock);
    T part = 0;
#pragma omp simd simdlen(kVecLanes <T>) reduction(+ : part)
    for (int j = j0; j < j1; ++j) {
      const T e = vec_exp(x[j] - mx);
      p[j] = e;
      part += e;
    }
    sum += static_cast<double>(part);
  }
  return sum;
}

}  // namespace

template <class T>
void crossentropy_forward(T* losses, T* probs, const T* logits, const int32_t* targets, int N,
                          int V, int Vp) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    const T* x = logits + static_cast<size_t>(i) * Vp;  // may alias p: same-index access only
    T* p = probs + static_cast<size_t>(i) * Vp;
    const T x_target = x[targets[i]];
    const T mx = row_max(x, V);
    const double sum = exp_row(p, x, mx, V);
    const T inv = static_cast<T>(1.0 / sum);
#pragma omp simd simdlen(kVecLanes <T>)
    for (int j = 0; j < V; ++j) p[j] *= inv;
    for (int j = V; j < Vp; ++j) p[j] = T(0);
    losses[i] = static_cast<T>(std::log(sum) - static_cast<double>(x_target - mx));
  }
}

template <class T>
void crossentropy_backward(T* dlogits, const T* probs, const int32_t* targets, T scale, int N,
                           int V, int Vp) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    const T* p = probs + static_cast<size_t>(i) * Vp;  // may alias d: same-index access only
    T* d = dlogits + static_cast<size_t>(i) * Vp;
    const int target = targets[i];
    const T p_target = p[target];
#pragma omp simd simdlen(kVecLanes <T>)
    for (int j = 0; j < V; ++j) d[j] = scale * p[j];
    for (int j = V; j < Vp; ++j) d[j] = T(0);
    d[target] = scale * (p_target - T(1));
  }
}

template <class T>
void crossentropy_forward_backward(T* losses, T* dlogits, const T* logits, const int32_t* targets,
                                   T scale, int N, int V, int Vp) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    const T* x = logits + static_cast<size_t>(i) * Vp;  // may alias d: same-index access only
    T* d = dlogits + static_cast<size_t>(i) * Vp;
    const int target = targets[i];
    const T x_target = x[target];
    const T mx = row_max(x, V);
    const double sum = exp_row(d, x, mx, V);  // d holds exp(x - mx) from here
    const T inv = static_cast<T>(1.0 / sum);
    // The probability as crossentropy_forward stores it: d * inv rounded once. As fma(d, inv, 0)
    // it cannot be contracted with the "- 1" below into one fma (GCC contracts in C++).
    const T p_target = std::fma(d[target], inv, T(0));
#pragma omp simd simdlen(kVecLanes <T>)
    for (int j = 0; j < V; ++j) d[j] = scale * (d[j] * inv);
    for (int j = V; j < Vp; ++j) d[j] = T(0);
    d[target] = scale * (p_target - T(1));
    losses[i] = static_cast<T>(std::log(sum) - static_cast<double>(x_target - mx));
  }
}

template void crossentropy_forward<float>(float*, float*, const float*, const int32_t*, int, int,
                                          int);
template void crossentropy_forward<double>(double*, double*, const double*, const int32_t*, int,
                                           int, int);
template void crossentropy_backward<float>(float*, const float*, const int32_t*, float, int, int,
                                           int);
template void crossentropy_backward<double>(double*, const double*, const int32_t*, double, int,
                                            int, int);

template void crossentropy_forward_backward<float>(float*, float*, const float*, const int32_t*,
                                                   float, int, int, int);
template void crossentropy_forward_backward<double>(double*, double*, const double*, const int32_t*,
                                                    double, int, int, int);

}  // namespace gossamer::kernels::cpu
