// CUDA versions of kernels/cpu/rmsnorm.h (Llama's RMSNorm, as Hugging Face's LlamaRMSNorm):
//   rstd[n] = 1 / sqrt(mean_c(inp[n,c]^2) + eps),  out[n,c] = inp[n,c] * rstd[n] * w[c]
//   forward: out and rstd assigned;  backward: dinp += ..., dw += ... (both accumulate)
// One warp per row (mean square in float, a fixed butterfly across the warp); dw by per-block
// partials over fixed row slices, summed per channel in block order: deterministic, no
// atomics. Device pointers, cuda_context's stream().
#pragma once

namespace gossamer::kernels::cuda {

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C,
                     double eps);
void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w,
                      const float* rstd, int N, int C);

}  // namespace gossamer::kernels::cuda
