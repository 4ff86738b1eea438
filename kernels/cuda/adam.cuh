// CUDA versions of the dense Adam-family updates of kernels/cpu/adamw.h and kernels/cpu/adams.h,
// with the same formulas, the same per-call constants computed on the host in the same
// precision, and the same AdamStep fields read:
//   adamw_update: param *= 1 - lr wd; m, v updated; param -= (lr / bc1) m / (sqrt(v) / sqrt(bc2) +
//   eps) adams_update: den from the previous momentum, then m; param -= lr (m / c) / den
// One thread per coordinate (grid-stride), in place on param and the state; elementwise, so
// deterministic. The sparse variants (adamw_update_blocks, adams_update_indexed,
// adams_update_from_momentum) are not on CUDA yet. Device pointers, cuda_context's stream().
#pragma once

#include <cstddef>

#include "kernels/adam_step.h"

namespace gossamer::kernels::cuda {

void adamw_update(float* param, const float* grad, float* m, float* v, size_t n,
                  const AdamStep& hp);
void adams_update(float* param, const float* grad, float* m, size_t n, const AdamStep& hp);

}  // namespace gossamer::kernels::cuda
