// LayerNorm over the last dimension, eps = 1e-5 (GPT-2).
//   forward:  out = (inp - mean) * rstd * w + b; saves mean and rstd   (all assigned)
//   backward: dinp += ..., dw += ..., db += ...                         (all accumulate)
#pragma once

namespace gossamer::kernels::cpu {

constexpr double kLayerNormEps = 1e-5;

template <class T>
void layernorm_forward(T* out,        // (N,C)
                       T* mean,       // (N)
                       T* rstd,       // (N)
                       const T* inp,  // (N,C)
                       const T* w,    // (C)
                       const T* b,    // (C)
                       int N, int C);

template <class T>
void layernorm_backward(T* dinp,        // (N,C) +=
                        T* dw,          // (C)   +=
                        T* db,          // (C)   +=
                        const T* dout,  // (N,C)
                        const T* inp,   // (N,C)
                        const T* w,     // (C)
                        const T* mean,  // (N)
                        const T* rstd,  // (N)
                        int N, int C);

}  // namespace gossamer::kernels::cpu
