// SCAPE's mask score on the CPU (the reference of kernels/cuda/mask_score.cuh), element by
// element in T:
//   mask_score: out[i] = |a x[i] + b y[i]|, or |a x[i]| when y is null (the momentum, or the
//     momentum with its pending residual: a = beta1, b = (1 - beta1) ranks)
//   age_bonus:  scores[i] *= 1 + k max(0, now - last[i]) (exploration: the coordinates left
//     unselected longest score higher; last[] holds each coordinate's last update step)
// out may alias x or y.
#pragma once

#include <cstddef>

namespace gossamer::kernels::cpu {

template <class T>
void mask_score(T* out, T a, const T* x, T b, const T* y, size_t n);

template <class T>
void age_bonus(T* scores, const float* last, T k, T now, size_t n);

}  // namespace gossamer::kernels::cpu
