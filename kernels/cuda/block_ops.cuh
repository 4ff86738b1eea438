// CUDA versions of kernels/cpu/block_ops.h (the block moves of dynamic sparse training), the
// same results bit for bit: accumulate_blocks and zero_blocks one thread per element of the
// listed blocks (blocks distinct within a call: no two threads write one element);
// block_l1_norms one thread per block summing its elements in index order in double, as the
// CPU does; increment_clamped and assign_at one thread per count. Device pointers,
// cuda_context's stream().
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels::cuda {

void accumulate_blocks(float* compact, const float* x, const int32_t* blocks, size_t n_blocks,
                       size_t B, size_t n_x);
void zero_blocks(float* x, const int32_t* blocks, size_t n_blocks, size_t B, size_t n_x);
void block_l1_norms(double* out, const float* x, const int32_t* blocks, size_t n_blocks, size_t B,
                    size_t n_x);
void increment_clamped(int32_t* x, size_t n, int32_t cap);
void assign_at(int32_t* x, const int32_t* idx, size_t k, int32_t value);

}  // namespace gossamer::kernels::cuda
