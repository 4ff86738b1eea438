// Elementwise and reduction helpers shared by the model and the optimizers.
//   add:          out = a + b                (assigned; out may alias a or b)
//   accumulate:   dst += src
//   scale:        x *= s
//   sum_squares:  returns sum x^2, accumulated in double in a fixed order (deterministic for
//                 a fixed thread count)
#pragma once

#include <cstddef>

namespace gossamer::kernels::cpu {

template <class T>
void add(T* out, const T* a, const T* b, size_t n);

template <class T>
void accumulate(T* dst, const T* src, size_t n);

template <class T>
void scale(T* x, T s, size_t n);

template <class T>
double sum_squares(const T* x, size_t n);

}  // namespace gossamer::kernels::cpu
