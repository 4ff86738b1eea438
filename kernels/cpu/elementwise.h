// Elementwise and reduction helpers shared by the model and the optimizers.
//   add:          out = a + b                (assigned; out may alias a or b)
//   accumulate:   dst += src
//   scale:        x *= s
//   axpy:         y += a x
//   axpby:        y = b y + a x
//   sum_squares:  returns sum x^2, accumulated in double in a fixed order (deterministic for
//                 a fixed thread count)
//   sum_squares_to: *out = sum_squares(x, n)
//   accumulate_sum_squares: y += x, and returns the sum of the new y^2 in sum_squares' order
//   sum:          returns sum x in double, in sum_squares' order
//   to_bf16:      out = bf16(in), nearest with ties to even, NaN kept NaN (double: via float)
//   from_bf16:    out = in widened (exact)
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels::cpu {

template <class T>
void add(T* out, const T* a, const T* b, size_t n);

template <class T>
void accumulate(T* dst, const T* src, size_t n);

template <class T>
void scale(T* x, T s, size_t n);

template <class T>
void axpy(T* y, T a, const T* x, size_t n);

template <class T>
void axpby(T* y, T a, const T* x, T b, size_t n);

template <class T>
double sum_squares(const T* x, size_t n);

template <class T>
void sum_squares_to(double* out, const T* x, size_t n);

template <class T>
double accumulate_sum_squares(T* y, const T* x, size_t n);

template <class T>
double sum(const T* x, size_t n);

template <class T>
void to_bf16(uint16_t* out, const T* in, size_t n);

template <class T>
void from_bf16(T* out, const uint16_t* in, size_t n);

}  // namespace gossamer::kernels::cpu
