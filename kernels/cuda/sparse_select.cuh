// SCAPE's selection on the GPU: exact top-k with the CPU's tie rule (src/optim/sparse_mask.h's
// top_k_indices: NaN counts as -inf, -0 equals +0, ties go to the lower index, the result sorted
// ascending), and the pack / unpack of values at a mask.
//   top_k_indices: the k-th largest key by radix select (four 8-bit passes over an orderable
//     32-bit key, each a shared-memory histogram added into a global one and a one-thread digit
//     choice that stays on the device), then per 4096-element tile the counts above and equal
//     to it, one block's scan of the tiles' offsets, and a write pass that places each selected
//     index in index order (ballots and popcounts). Integer counts only: exact and
//     deterministic; equal to the CPU's indices bit for bit. No host synchronisation.
//   gather: out[j] = x[idx[j]]; scatter: x[idx[j]] = in[j]; scale_at: x[idx[j]] *= s, s == 0
//     writing +0 (idx distinct; the CPU's kernels/cpu/sparse_select.h).
// Device pointers, cuda_context's stream(); top_k uses cuda_context's workspace. Indices are
// 32-bit: n must be below 2^32 (the CPU's masks are uint32_t too), and k <= n as on the CPU;
// gossamer::Error otherwise. Needs sm_80 or newer (__reduce_add_sync).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels::cuda {

void top_k_indices(const float* scores, size_t n, size_t k, uint32_t* out);
void gather(float* out, const float* x, const uint32_t* idx, size_t k);
void scatter(float* x, const float* in, const uint32_t* idx, size_t k);
void scale_at(float* x, const uint32_t* idx, size_t k, float s);

}  // namespace gossamer::kernels::cuda
