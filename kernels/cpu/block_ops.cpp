// Implementation of block_ops.h: one OpenMP loop over the listed blocks each.
#include "kernels/cpu/block_ops.h"

#include <algorithm>
#include <cmath>

namespace gossamer::kernels::cpu {

namespace {
constexpr size_t kParallelMin = 1024;  // blocks below which we stay serial

// Elements of block b of a matrix of n_x elements.
inline size_t block_elements(int32_t b, size_t B, size_t n_x) {
  return std::min(B, n_x - size_t(b) * B);
}
}  // namespace

template <class T>
void accumulate_blocks(T* compact, const T* x, const int32_t* blocks, size_t n_blocks, size_t B,
                       size_t n_x) {
#pragma omp parallel for schedule(static) if (n_blocks >= kParallelMin)
  for (size_t j = 0; j < n_blocks; ++j) {
    const T* src = x + size_t(blocks[j]) * B;
    T* dst = compact + j * B;
    for (size_t i = 0, e = block_elements(blocks[j], B, n_x); i < e; ++i) dst[i] += src[i];
  }
}

template <class T>
void zero_blocks(T* x, const int32_t* blocks, size_t n_blocks, size_t B, size_t n_x) {
#pragma omp parallel for schedule(static) if (n_blocks >= kParallelMin)
  for (size_t j = 0; j < n_blocks; ++j)
    std::fill_n(x + size_t(blocks[j]) * B, block_elements(blocks[j], B, n_x), T(0));
}

template <class T>
void block_l1_norms(double* out, const T* x, const int32_t* blocks, size_t n_blocks, size_t B,
                    size_t n_x) {
#pragma omp parallel for schedule(static) if (n_blocks >= kParallelMin)
  for (size_t j = 0; j < n_blocks; ++j) {
    const T* w = x + size_t(blocks[j]) * B;
    double l1 = 0;
    for (size_t i = 0, e = block_elements(blocks[j], B, n_x); i < e; ++i)
      l1 += std::fabs(double(w[i]));
    out[j] = l1;
  }
}

void assign_at(int32_t* x, const int32_t* idx, size_t k, int32_t value) {
  for (size_t j = 0; j < k; ++j) x[idx[j]] = value;
}

void increment_clamped(int32_t* x, size_t n, int32_t cap) {
#pragma omp parallel for schedule(static) if (n >= 65536)
  for (size_t j = 0; j < n; ++j) x[j] = std::min(x[j] + 1, cap);
}

template void accumulate_blocks<float>(float*, const float*, const int32_t*, size_t, size_t,
                                       size_t);
template void accumulate_blocks<double>(double*, const double*, const int32_t*, size_t, size_t,
                                        size_t);
template void zero_blocks<float>(float*, const int32_t*, size_t, size_t, size_t);
template void zero_blocks<double>(double*, const int32_t*, size_t, size_t, size_t);
template void block_l1_norms<float>(double*, const float*, const int32_t*, size_t, size_t, size_t);
template void block_l1_norms<double>(double*, const double*, const int32_t*, size_t, size_t,
                                     size_t);

}  // namespace gossamer::kernels::cpu
