// CUDA versions of kernels/cpu/encoder.h: token + position embedding (GPT-2), or the token
// embedding alone (Llama: wpe / dwpe == nullptr).
//   forward:  out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]                     (assigned)
//   backward: dwte[tokens[b,t],:] += dout[b,t,:]; dwpe[t,:] += dout[b,t,:]   (accumulate)
// Tokens (device memory) must lie in [0, Vp); the caller validates them on the host.
// Deterministic without atomics: dwpe by one thread per (t, c) summing over b in order; dwte by
// one thread per channel walking all (b, t) in order (two equal tokens hit the same row, so
// rows cannot be split). That leaves only C threads: correct, and slow at GPT-2 sizes (a
// bucketed backward, tokens grouped on the host as llm.c does, is the known way to fix it).
// Device pointers, cuda_context's stream().
#pragma once

#include <cstdint>

namespace gossamer::kernels::cuda {

void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                     int T, int C);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                      int T, int C);

}  // namespace gossamer::kernels::cuda
