// CUDA versions of kernels/cpu/mask_score.h (SCAPE's mask score), the same float formulas (nvcc
// fuses multiply-adds where the CPU compiler may not: a score can differ in the last bit, and a
// near-tie can be selected differently than on the CPU):
//   mask_score: out[i] = |a x[i] + b y[i]| (|a x[i]| when y is null);
//   age_bonus:  scores[i] *= 1 + k max(0, now - last[i]).
// One grid-stride loop each (a fused multiply-add where the compiler contracts it, as on the
// CPU). Device pointers, cuda_context's stream().
#pragma once

#include <cstddef>

namespace gossamer::kernels::cuda {

void mask_score(float* out, float a, const float* x, float b, const float* y, size_t n);
void age_bonus(float* scores, const float* last, float k, float now, size_t n);

}  // namespace gossamer::kernels::cuda
