// Elementwise and reduction helpers, see elementwise.h.
// Small arrays run on the calling thread (a parallel region costs microseconds). sum_squares
// cuts the array into a fixed number of equal blocks, independent of the thread count, sums
// each block in double over 16 explicit lanes, then adds the block sums in block order: the
// result is bitwise reproducible for any thread count and any buffer alignment.
#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <cstddef>

#include "comm/bf16.h"

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
double sum_squares(const T* x, size_t n) {
  double partial[kSumBlocks];
  const size_t nblocks = n >= kParallelMin ? kSumBlocks : 1;
#pragma omp parallel for schedule(static) if (nblocks > 1)
  for (size_t blk = 0; blk < nblocks; ++blk) {
    const size_t i0 = n * blk / nblocks;
    const size_t i1 = n * (blk + 1) / nblocks;
    // Explicit lanes rather than `omp simd reduction`, so that the order cannot depend on how
    // the compiler peels the loop for the buffer's alignment.
    double lane[kLanes] = {};
    size_t i = i0;
    for (; i + kLanes <= i1; i += kLanes) {
      for (size_t j = 0; j < kLanes; ++j) {
        const double v = static_cast<double>(x[i + j]);
        lane[j] += v * v;
      }
    }
    for (; i < i1; ++i) {
      const double v = static_cast<double>(x[i]);
      lane[0] += v * v;
    }
    double acc = 0.0;
    for (size_t j = 0; j < kLanes; ++j) acc += lane[j];
    partial[blk] = acc;
  }
  double total = 0.0;
  for (size_t blk = 0; blk < nblocks; ++blk) total += partial[blk];
  return total;
}

template <class T>
void to_bf16(uint16_t* out, const T* in, size_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) out[i] = comm::float_to_bf16(static_cast<float>(in[i]));
}

template <class T>
void from_bf16(T* out, const uint16_t* in, size_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(comm::bf16_to_float(in[i]));
}

template void add<float>(float*, const float*, const float*, size_t);
template void add<double>(double*, const double*, const double*, size_t);
template void accumulate<float>(float*, const float*, size_t);
template void accumulate<double>(double*, const double*, size_t);
template void axpy<float>(float*, float, const float*, size_t);
template void axpy<double>(double*, double, const double*, size_t);
template void scale<float>(float*, float, size_t);
template void scale<double>(double*, double, size_t);
template double sum_squares<float>(const float*, size_t);
template double sum_squares<double>(const double*, size_t);
template void to_bf16<float>(uint16_t*, const float*, size_t);
template void to_bf16<double>(uint16_t*, const double*, size_t);
template void from_bf16<float>(float*, const uint16_t*, size_t);
template void from_bf16<double>(double*, const uint16_t*, size_t);

}  // namespace gossamer::kernels::cpu
