// CUDA versions of kernels/cpu/encoder.h: token + position embedding (GPT-2), or the token
// embedding alone (Llama: wpe / dwpe == nullptr).
//   forward:  out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]                     (assigned)
//   backward: dwte[tokens[b,t],:] += dout[b,t,:]; dwpe[t,:] += dout[b,t,:]   (accumulate)
// Tokens (device memory) must lie in [0, Vp); the caller validates them on the host.
// Deterministic without atomics: dwpe by one thread per (t, c) adding over b in order; dwte by
// grouping the positions by token on the device (CUB's radix sort of (token, position) pairs,
// stable, so each token's positions stay in (b, t) order), then one block per distinct token,
// its threads over the channels, adding that token's rows of dout into its row of dwte in
// (b, t) order: the CPU op's order, so the CPU's bits. The sort's buffers come from
// cuda_context's workspace (3 int32 arrays of B*T and CUB's temporary storage). Both are the
// CPU op's additions in the CPU op's order, so its bits.
// Device pointers, cuda_context's stream().
#pragma once

#include <cstdint>

namespace gossamer::kernels::cuda {

void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                     int T, int C);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                      int T, int C);

}  // namespace gossamer::kernels::cuda
