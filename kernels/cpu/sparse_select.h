// SCAPE's selection and its indexed moves on the CPU (the reference of kernels/cuda/
// sparse_select.cuh):
//   top_k_indices: the k indices of the largest scores, sorted ascending; NaN counts as -inf,
//     -0 equals +0 and ties go to the lower index, so the result is a pure function of the
//     scores. k <= n < 2^32, gossamer::Error otherwise.
//   gather:   out[j] = x[idx[j]]
//   scatter:  x[idx[j]] = in[j]
//   scale_at: x[idx[j]] *= s, and s == 0 writes +0 (a NaN or -0 there becomes +0)
// The k indices of gather / scatter / scale_at are distinct (the OpenMP loops rely on it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels::cpu {

template <class T>
void top_k_indices(const T* scores, size_t n, size_t k, uint32_t* out);

template <class T>
void gather(T* out, const T* x, const uint32_t* idx, size_t k);

template <class T>
void scatter(T* x, const T* in, const uint32_t* idx, size_t k);

template <class T>
void scale_at(T* x, const uint32_t* idx, size_t k, T s);

}  // namespace gossamer::kernels::cpu
