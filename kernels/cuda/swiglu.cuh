// CUDA versions of kernels/cpu/swiglu.h: SwiGLU on the fused gate/up projection, inp row n =
// [gate (F) | up (F)]:  out[n,f] = silu(gate[n,f]) * up[n,f].
//   forward: out assigned;  backward: dinp += ... (dgate = dout up silu'(gate), dup = dout
//   silu(gate))
// The CPU op's formulas (sigmoid through exp(-x), argument capped at 80), one thread per (n, f).
// Device pointers, cuda_context's stream(); elementwise (deterministic).
#pragma once

namespace gossamer::kernels::cuda {

void swiglu_forward(float* out, const float* inp, int N, int F);
void swiglu_backward(float* dinp, const float* dout, const float* inp, int N, int F);

}  // namespace gossamer::kernels::cuda
