// CUDA version of kernels/cpu/outer_update.h (the outer Nesterov step of DiLoCo and GASLoC on
// the complete graph; pointers are device memory, launched on cuda_context's stream()): one
// grid-stride loop with the CPU op's formula and order of operations.
#pragma once

#include <cstddef>

namespace gossamer::kernels::cuda {

void nesterov_outer(float* anchor, float* m, const float* delta, float lr, float mu, size_t n);

}  // namespace gossamer::kernels::cuda
