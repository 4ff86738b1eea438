// GELU, tanh approximation (GPT-2's "gelu_new"):
//   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// forward: out assigned (out may alias inp).  backward: dinp += dout * gelu'(inp).
#pragma once

#include <cstddef>

namespace gossamer::kernels::cpu {

template <class T>
void gelu_forward(T* out, const T* inp, size_t n);  // (n), (n)

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, size_t n);  // (n) +=, (n), (n)

}  // namespace gossamer::kernels::cpu
