// SwiGLU activation of the Llama MLP (Shazeer 2020, https://arxiv.org/abs/2002.05202), on the
// output of the fused gate/up projection: inp row n is [gate (F) | up (F)] and
//   out[n,f] = silu(gate[n,f]) * up[n,f],   silu(x) = x * sigmoid(x)
// forward:  out assigned.
// backward: dinp += ...  (both halves: dgate = dout * up * silu'(gate), dup = dout * silu(gate))
#pragma once

namespace gossamer::kernels::cpu {

template <class T>
void swiglu_forward(T* out,        // (N,F)
                    const T* inp,  // (N,2F)
                    int N, int F);

template <class T>
void swiglu_backward(T* dinp,        // (N,2F) +=
                     const T* dout,  // (N,F)
                     const T* inp,   // (N,2F)
                     int N, int F);

}  // namespace gossamer::kernels::cpu
