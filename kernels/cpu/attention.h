// Causal self-attention with grouped-query attention (GQA; Ainslie et al. 2023,
// https://arxiv.org/abs/2305.13245). NH query heads of size hs = C / NH share NKV key/value heads
// (NKV divides NH): query head h uses kv head h / (NH / NKV). NKV == NH is multi-head attention
// (GPT-2), NKV == 1 multi-query. A qkv row holds [q: NH*hs | k: NKV*hs | v: NKV*hs], row stride
// C + 2*NKV*hs (3C for NKV == NH). For each (b, h), with g = h / (NH / NKV):
//   q = qkv[b,:,h*hs:(h+1)*hs], k = qkv[b,:,C+g*hs:...], v = qkv[b,:,C+NKV*hs+g*hs:...]
//   att[b,h,t,:] = softmax_{s<=t}(q_t . k_s / sqrt(hs)),  entries s > t are 0
//   out[b,t,h*hs:(h+1)*hs] = sum_s att[b,h,t,s] v_s
// forward:  out and `saved` assigned: what the backward needs besides qkv and out, in a layout
//           each backend chooses (kernels/ops.h) and of the size its attention_saved_size
//           says. This CPU op saves the attention matrix att itself, (B,NH,T,T): its backward
//           reads it instead of recomputing it (the CUDA op keeps the softmax's row statistics
//           and recomputes, flash-style, so that its memory is linear in T; on the CPU the
//           recomputation cost 7.6% of the study model's step for 5% of its memory,
//           docs/PERF.md).
// backward: dqkv += ...; out (the forward's) is not read here; scratch, attention_scratch_size
//           elements (a (B,NH,T,T) workspace), is overwritten.
#pragma once

#include <cstddef>

namespace gossamer::kernels::cpu {

// Elements of the forward's saved state and of the backward's workspace: B*NH*T*T each.
size_t attention_saved_size(int B, int T, int NH);
size_t attention_scratch_size(int B, int T, int NH);

template <class Real>
void attention_forward(Real* out,        // (B,T,C)
                       Real* att,        // (B,NH,T,T): the saved state
                       const Real* qkv,  // (B,T,C+2*NKV*hs)
                       int B, int T, int C, int NH, int NKV);

template <class Real>
void attention_backward(Real* dqkv,        // (B,T,C+2*NKV*hs) +=
                        Real* scratch,     // (B,NH,T,T) workspace
                        const Real* dout,  // (B,T,C)
                        const Real* qkv,   // (B,T,C+2*NKV*hs)
                        const Real* out,   // (B,T,C): unused here
                        const Real* att,   // (B,NH,T,T): the forward's saved state
                        int B, int T, int C, int NH, int NKV);

}  // namespace gossamer::kernels::cpu
