// Token + position embedding (GPT-2).
//   forward:  out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]            (out assigned)
//   backward: dwte[tokens[b,t],:] += dout[b,t,:]; dwpe[t,:] += dout[b,t,:]   (accumulate)
// Tokens must lie in [0, Vp) and t < max_seq_len; the caller validates them.
// The backward is deterministic: each thread owns a slice of the channel dimension.
#pragma once

#include <cstdint>

namespace gossamer::kernels::cpu {

template <class Real>
void encoder_forward(Real* out,              // (B,T,C)
                     const int32_t* tokens,  // (B,T)
                     const Real* wte,        // (Vp,C)
                     const Real* wpe,        // (maxT,C)
                     int B, int T, int C);

template <class Real>
void encoder_backward(Real* dwte,             // (Vp,C)   +=
                      Real* dwpe,             // (maxT,C) +=
                      const Real* dout,       // (B,T,C)
                      const int32_t* tokens,  // (B,T)
                      int B, int T, int C);

}  // namespace gossamer::kernels::cpu
