// CUDA versions of the sparse Adam-family updates of kernels/cpu/adamw.h and kernels/cpu/adams.h
// (SMET's block-compact AdamW, SCAPE's indexed and from-momentum AdamS), with the same formulas,
// the same AdamStep fields read, and the CPU's float arithmetic (powers of beta and of the decay
// factor taken in double and rounded to float, as the CPU ops do).
//   adamw_update_blocks: a warp per (block, 4096-element chunk): the update of the chunk and its
//     sum of squared parameter changes (warp butterfly), then, when a block has several chunks,
//     one thread per block adds its chunks' sums in chunk order; deterministic. A block of the
//     default size 16 leaves half a warp idle.
//   adams_update_indexed, adams_update_from_momentum: a thread per listed coordinate j; the
//     coordinates idx[j] (state) and pidx[j] (parameter) are distinct within a call, as on the
//     CPU (whose OpenMP loop relies on it too), so the result does not depend on the order.
// Device pointers, cuda_context's stream(); the block sums use cuda_context's workspace.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/adam_step.h"

namespace gossamer::kernels::cuda {

void adamw_update_blocks(float* param, const float* grad, float* m, float* v, const int32_t* blocks,
                         const int32_t* steps, size_t n_blocks, size_t block_size, size_t n_param,
                         float* update_sq, const AdamStep& hp);
void adams_update_indexed(float* param, const uint32_t* pidx, const uint32_t* idx, const float* g,
                          size_t k, const IndexedAdamsState<float>& state, const AdamStep& hp);
void adams_update_from_momentum(float* param, const uint32_t* pidx, float* m_last, float* last,
                                const uint32_t* idx, const float* m_now, const uint8_t* decay,
                                size_t k, const AdamStep& hp);

}  // namespace gossamer::kernels::cuda
