// CUDA versions of kernels/cpu/rope.h: rotary position embedding in Hugging Face's rotate_half
// convention (element i of a head pairs with i + hs/2), in place on a strided buffer x of
// (B, T, row_stride) whose columns [0, n_heads * head_dim) are rotated, the others untouched.
//   forward: x = rotate(x);  backward: dx = rotate^-1(dx) (assigned, in place)
// One thread per (b, t, head, i < hs/2) pair; the angle t * theta^(-2i/hs) and its cosine and
// sine in double, rounded to float, as the CPU op does, so both see the same factors.
// Device pointers, cuda_context's stream(); no reductions (deterministic).
#pragma once

namespace gossamer::kernels::cuda {

void rope_forward(float* x, int B, int T, int n_heads, int head_dim, int row_stride, double theta);
void rope_backward(float* dx, int B, int T, int n_heads, int head_dim, int row_stride,
                   double theta);

}  // namespace gossamer::kernels::cuda
