// CUDA versions of kernels/cpu/attention.h: causal self-attention with grouped-query attention
// (NH query heads share NKV key/value heads; a qkv row is [q: NH*hs | k: NKV*hs | v: NKV*hs]),
// the attention matrix materialised as in the CPU op:
//   forward:  att[b,h,t,:] = softmax_{s<=t}(q_t . k_s / sqrt(hs)) (0 for s > t),
//             out[b,t,h] = sum_s att v_s                                   (both assigned)
//   backward: dqkv += ...; scratch (B,NH,T,T) overwritten
// A reference implementation, correct before fast: one warp per attention row for the softmax
// and its backward, one thread per output element summing over s (and, for dk / dv, over the
// group's heads and t >= s) in a fixed order: deterministic, no atomics, memory quadratic in T.
// The flash-style kernel (memory linear in T) and cuDNN's fused attention come next
// (docs/CUDA.md). Device pointers, cuda_context's stream().
#pragma once

namespace gossamer::kernels::cuda {

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       int NKV);
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH, int NKV);

}  // namespace gossamer::kernels::cuda
