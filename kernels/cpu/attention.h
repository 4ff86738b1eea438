// Causal multi-head self-attention (GPT-2): for each (b, h), with head size hs = C / NH,
//   q = qkv[b,:,h*hs:(h+1)*hs], k = qkv[b,:,C+h*hs:...], v = qkv[b,:,2C+h*hs:...]
//   att[b,h,t,:] = softmax_{s<=t}(q_t . k_s / sqrt(hs)),  entries s > t are 0
//   out[b,t,h*hs:(h+1)*hs] = sum_s att[b,h,t,s] v_s
// forward:  out and att assigned (att is saved for the backward).
// backward: dqkv += ...; scratch is overwritten (workspace of the same shape as att).
#pragma once

namespace gossamer::kernels::cpu {

template <class Real>
void attention_forward(Real* out,        // (B,T,C)
                       Real* att,        // (B,NH,T,T)
                       const Real* qkv,  // (B,T,3C)
                       int B, int T, int C, int NH);

template <class Real>
void attention_backward(Real* dqkv,        // (B,T,3C) +=
                        Real* scratch,     // (B,NH,T,T) workspace
                        const Real* dout,  // (B,T,C)
                        const Real* qkv,   // (B,T,3C)
                        const Real* att,   // (B,NH,T,T)
                        int B, int T, int C, int NH);

}  // namespace gossamer::kernels::cpu
