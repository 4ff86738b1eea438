// Causal self-attention with grouped-query attention (GQA; Ainslie et al. 2023,
// https://arxiv.org/abs/2305.13245). NH query heads of size hs = C / NH share NKV key/value heads
// (NKV divides NH): query head h uses kv head h / (NH / NKV). NKV == NH is multi-head attention
// (GPT-2), NKV == 1 multi-query. A qkv row holds [q: NH*hs | k: NKV*hs | v: NKV*hs], row stride
// C + 2*NKV*hs (3C for NKV == NH). For each (b, h), with g = h / (NH / NKV):
//   q = qkv[b,:,h*hs:(h+1)*hs], k = qkv[b,:,C+g*hs:...], v = qkv[b,:,C+NKV*hs+g*hs:...]
//   att[b,h,t,:] = softmax_{s<=t}(q_t . k_s / sqrt(hs)),  entries s > t are 0
//   out[b,t,h*hs:(h+1)*hs] = sum_s att[b,h,t,s] v_s
// forward:  out and att assigned (att is saved for the backward).
// backward: dqkv += ...; scratch is overwritten (workspace of the same shape as att).
#pragma once

namespace gossamer::kernels::cpu {

template <class Real>
void attention_forward(Real* out,        // (B,T,C)
                       Real* att,        // (B,NH,T,T)
                       const Real* qkv,  // (B,T,C+2*NKV*hs)
                       int B, int T, int C, int NH, int NKV);

template <class Real>
void attention_backward(Real* dqkv,        // (B,T,C+2*NKV*hs) +=
                        Real* scratch,     // (B,NH,T,T) workspace
                        const Real* dout,  // (B,T,C)
                        const Real* qkv,   // (B,T,C+2*NKV*hs)
                        const Real* att,   // (B,NH,T,T)
                        int B, int T, int C, int NH, int NKV);

}  // namespace gossamer::kernels::cpu
