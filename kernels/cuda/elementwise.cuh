// CUDA versions of kernels/cpu/elementwise.h (same formulas, "=" / "+=" rules and aliasing;
// pointers are device memory, launched on cuda_context's stream()).
//   add, accumulate, scale: one grid-stride loop each; exact (one float operation per element).
//   axpy: y += a x, one grid-stride loop (a fused multiply-add where the compiler contracts it).
//   axpby: y = b y + a x, the same.
//   sum_squares: per-block partial sums in double over a fixed grid (a function of n only),
//   each block's tree reduction in a fixed order, the partials added on the host in block
//   order: deterministic for a given n. Synchronises the stream (it returns a host value).
//   accumulate_sum_squares: y += x in the same pass, then the same sum of the new y^2.
//   sum: the same reduction of x itself.
//   sum_squares_to: sum_squares' partials, then one thread adds them in block order on the
//   device (the same bits as the host's sum) into *out; nothing synchronises.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels::cuda {

void add(float* out, const float* a, const float* b, size_t n);
void accumulate(float* dst, const float* src, size_t n);
void scale(float* x, float s, size_t n);
void axpy(float* y, float a, const float* x, size_t n);
void axpby(float* y, float a, const float* x, float b, size_t n);
double sum_squares(const float* x, size_t n);
double accumulate_sum_squares(float* y, const float* x, size_t n);
double sum(const float* x, size_t n);
void sum_squares_to(double* out, const float* x, size_t n);
// bf16 conversions with the CPU op's rule (bit manipulation: exact, the same bits).
void to_bf16(uint16_t* out, const float* in, size_t n);
void from_bf16(float* out, const uint16_t* in, size_t n);

}  // namespace gossamer::kernels::cuda
