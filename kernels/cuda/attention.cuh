// CUDA versions of kernels/cpu/attention.h: causal self-attention with grouped-query attention
// (NH query heads share NKV key/value heads; a qkv row is [q: NH*hs | k: NKV*hs | v: NKV*hs]),
// flash-style: the (T, T) attention matrix is never stored (Dao et al. 2022,
// https://arxiv.org/abs/2205.14135), memory linear in T.
//   forward:  out assigned, and the saved state (kernels/ops.h; attention_saved_size(B, T, NH)
//             = B*NH*T*2 floats): stats[b,h,t] = (m, 1/l), the max m of the row's scaled
//             scores z_s = q_t . k_s / sqrt(hs) and the reciprocal of l = sum_s exp(z_s - m),
//             so att[t, s] = exp(z_s - m) / l; by an online softmax over tiles of 32 keys;
//   backward: dqkv += ...; scratch, attention_scratch_size(B, T, NH) = B*NH*T floats, holds
//             D_t = dout_t . out_t (= sum_s att datt); att is recomputed from q, k and the stats.
// fp32 on the CUDA cores, correct before fast: one warp per query row (forward, dq) or per key
// row (dk, dv, summed over the group's query heads), its 32 lanes splitting the head dimension,
// 16 rows per block sharing tiles of 32 rows of the other side in shared memory. Head sizes up
// to 256 (a larger one throws). Deterministic (no atomics; every sum in a fixed order that
// depends on the shape alone), not the CPU op's bits (other summation orders). Device
// pointers, cuda_context's stream().
#pragma once

#include <cstddef>

namespace gossamer::kernels::cuda {

size_t attention_saved_size(int B, int T, int NH);
size_t attention_scratch_size(int B, int T, int NH);
void attention_forward(float* out, float* stats, const float* qkv, int B, int T, int C, int NH,
                       int NKV);
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                        const float* out, const float* stats, int B, int T, int C, int NH, int NKV);

}  // namespace gossamer::kernels::cuda
