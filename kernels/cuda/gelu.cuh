// CUDA versions of kernels/cpu/gelu.h: GELU, tanh approximation (GPT-2's "gelu_new"), evaluated
// like the CPU op through 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)) with exp's argument capped at
// 80. forward: out assigned (out may alias inp); backward: dinp += dout * gelu'(inp).
// Device pointers, cuda_context's stream(); elementwise, so deterministic.
#pragma once

#include <cstddef>

namespace gossamer::kernels::cuda {

void gelu_forward(float* out, const float* inp, size_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n);

}  // namespace gossamer::kernels::cuda
