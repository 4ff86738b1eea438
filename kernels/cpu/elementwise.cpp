// Elementwise and reduction helpers, see elementwise.h.
// Small arrays run on the calling thread (a parallel region costs microseconds). sum_squares
// cuts the array into a fixed number of equal blocks, independent of the thread count, sums
// each block in double over 16 explicit lanes, then adds the block sums in block order: the
// result is bitwise reproducible for any thread count and any buffer alignment.
#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <cstddef>

#include "core/bf16.h"

namespace gossamer::kernels::cpu {

namespace {
constexpr size_t kParallelMin = size_t{1} << 15;  // elements below which we stay serial
constexpr size_t kSumBlocks = 64;                 // fixed block count of sum_squares
constexpr size_t kLanes = 16;                     // independent partial sums per block
}  // namespace

template <class T>
void add(T* out, const T* a, const T* b, size_t n) {
  // out may alias a or b: every element is read before it is written, at the same index.
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class T>
void accumulate(T* dst, const T* src, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

template <class T>
void scale(T* x, T s, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) x[i] *= s;
}

template <class T>
void axpy(T* y, T a, const T* x, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

template <class T>
void axpby(T* y, T a, const T* x, T b, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) y[i] = b * y[i] + a * x[i];
}

namespace {

// sum_squares' order over [i0, i1): 16 explicit lanes of term(i) (in double) rather than `omp
// simd reduction`, so that the order cannot depend on how the compiler peels the loop for the
// buffer's alignment.
template <class F>
double block_sum(size_t i0, size_t i1, F&& term) {
  double lane[kLanes] = {};
  size_t i = i0;
  for (; i + kLanes <= i1; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) lane[j] += term(i + j);
  for (; i < i1; ++i) lane[0] += term(i);
  double acc = 0.0;
  for (size_t j = 0; j < kLanes; ++j) acc += lane[j];
  return acc;
}

// The sum of term(i) over [0, n) in a fixed number of blocks (a function of n alone), the
// blocks' sums added in block order.
template <class F>
double blocked_sum(size_t n, F&& term) {
  double partial[kSumBlocks];
  const size_t nblocks = n >= kParallelMin ? kSumBlocks : 1;
#pragma omp parallel for schedule(static) if (nblocks > 1)
  for (size_t blk = 0; blk < nblocks; ++blk)
    partial[blk] = block_sum(n * blk / nblocks, n * (blk + 1) / nblocks, term);
  double total = 0.0;
  for (size_t blk = 0; blk < nblocks; ++blk) total += partial[blk];
  return total;
}

}  // namespace

template <class T>
double sum_squares(const T* x, size_t n) {
  return blocked_sum(n, [x](size_t i) {
    const double v = static_cast<double>(x[i]);
    return v * v;
  });
}

template <class T>
void sum_squares_to(double* out, const T* x, size_t n) {
  *out = sum_squares(x, n);
}

template <class T>
double accumulate_sum_squares(T* y, const T* x, size_t n) {
  return blocked_sum(n, [y, x](size_t i) {
    y[i] += x[i];
    const double v = static_cast<double>(y[i]);
    return v * v;
  });
}

template <class T>
double sum(const T* x, size_t n) {
  return blocked_sum(n, [x](size_t i) { return static_cast<double>(x[i]); });
}

template <class T>
void to_bf16(uint16_t* out, const T* in, size_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) out[i] = gossamer::float_to_bf16(static_cast<float>(in[i]));
}

template <class T>
void from_bf16(T* out, const uint16_t* in, size_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(gossamer::bf16_to_float(in[i]));
}

template void add<float>(float*, const float*, const float*, size_t);
template void add<double>(double*, const double*, const double*, size_t);
template void accumulate<float>(float*, const float*, size_t);
template void accumulate<double>(double*, const double*, size_t);
template void axpy<float>(float*, float, const float*, size_t);
template void axpy<double>(double*, double, const double*, size_t);
template void scale<float>(float*, float, size_t);
template void scale<double>(double*, double, size_t);
template void axpby<float>(float*, float, const float*, float, size_t);
template void axpby<double>(double*, double, const double*, double, size_t);
template double sum_squares<float>(const float*, size_t);
template double accumulate_sum_squares<float>(float*, const float*, size_t);
template double accumulate_sum_squares<double>(double*, const double*, size_t);
template double sum<float>(const float*, size_t);
template void sum_squares_to<float>(double*, const float*, size_t);
template void sum_squares_to<double>(double*, const double*, size_t);
template double sum<double>(const double*, size_t);
template double sum_squares<double>(const double*, size_t);
template void to_bf16<float>(uint16_t*, const float*, size_t);
template void to_bf16<double>(uint16_t*, const double*, size_t);
template void from_bf16<float>(float*, const uint16_t*, size_t);
template void from_bf16<double>(double*, const uint16_t*, size_t);

}  // namespace gossamer::kernels::cpu
