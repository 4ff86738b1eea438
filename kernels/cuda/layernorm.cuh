// CUDA versions of kernels/cpu/layernorm.h (LayerNorm over the last dimension, eps 1e-5):
//   forward:  out = (inp - mean) * rstd * w + b; saves mean and rstd   (all assigned)
//   backward: dinp += ..., dw += ..., db += ...                         (all accumulate)
// One warp per row; row statistics in float, two passes (mean, then the variance of the
// centred values), combined across the warp by a fixed butterfly. dw/db: per-block partial
// sums over a fixed slice of rows (in row order) into the workspace, then one thread per
// channel adds the partials in block order: deterministic, no atomics.
// Device pointers, cuda_context's stream().
#pragma once

namespace gossamer::kernels::cuda {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                       const float* b, int N, int C);
void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                        const float* w, const float* mean, const float* rstd, int N, int C);

}  // namespace gossamer::kernels::cuda
