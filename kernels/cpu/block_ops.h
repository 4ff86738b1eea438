// The block moves of dynamic sparse training (SMET, dst; src/optim/sparse_training.h) on the
// CPU, the reference of kernels/cuda/block_ops.cuh. A matrix of n_x elements is cut into blocks
// of B consecutive elements (the last one cut at n_x); blocks[j] names block j of a list
// (distinct within a call), and compact buffers hold B elements per listed block, in list order:
//   accumulate_blocks: compact[j B + i] += x[blocks[j] B + i]   (the routed gradient's slots)
//   zero_blocks:       x[blocks[j] B + i] = 0                    (pruned, regrown, inactive)
//   block_l1_norms:    out[j] = sum_i |x[blocks[j] B + i]| in double, in index order
// for i < min(B, n_x - blocks[j] B); and
//   increment_clamped: x[j] = min(x[j] + 1, cap)                 (the blocks' step counts)
//   assign_at:         x[idx[j]] = value                          (restarted step counts)
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels::cpu {

template <class T>
void accumulate_blocks(T* compact, const T* x, const int32_t* blocks, size_t n_blocks, size_t B,
                       size_t n_x);

template <class T>
void zero_blocks(T* x, const int32_t* blocks, size_t n_blocks, size_t B, size_t n_x);

template <class T>
void block_l1_norms(double* out, const T* x, const int32_t* blocks, size_t n_blocks, size_t B,
                    size_t n_x);

void increment_clamped(int32_t* x, size_t n, int32_t cap);
void assign_at(int32_t* x, const int32_t* idx, size_t k, int32_t value);

}  // namespace gossamer::kernels::cpu
