// Token + position embedding (GPT-2), or token embedding alone (Llama: wpe == nullptr).
//   forward:  out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]            (out assigned)
//   backward: dwte[tokens[b,t],:] += dout[b,t,:]; dwpe[t,:] += dout[b,t,:]   (accumulate)
// wpe == nullptr (forward) / dwpe == nullptr (backward): no position embedding, the wpe term
// is dropped (out = wte[tokens]; only dwte accumulates).
// Tokens must lie in [0, Vp) and t < max_seq_len; the caller validates them.
// The backward is deterministic: each thread owns a slice of the channel dimension.
#pragma once

#include <cstdint>

namespace gossamer::kernels::cpu {

template <class Real>
void encoder_forward(Real* out,              // (B,T,C)
                     const int32_t* tokens,  // (B,T)
                     const Real* wte,        // (Vp,C)
                     const Real* wpe,        // (maxT,C) or nullptr
                     int B, int T, int C);

template <class Real>
void encoder_backward(Real* dwte,             // (Vp,C)   +=
                      Real* dwpe,             // (maxT,C) += , or nullptr
                      const Real* dout,       // (B,T,C)
                      const int32_t* tokens,  // (B,T)
                      int B, int T, int C);

}  // namespace gossamer::kernels::cpu
