// RMSNorm over the last dimension (Llama; Zhang & Sennrich 2019, https://arxiv.org/abs/1910.07467),
// as Hugging Face's LlamaRMSNorm:
//   rstd[n] = 1 / sqrt(mean_c(inp[n,c]^2) + eps)
//   out[n,c] = inp[n,c] * rstd[n] * w[c]
// forward:  out and rstd assigned (rstd is saved for the backward).
// backward: dinp += ..., dw += ...                                   (both accumulate)
// eps is a model hyperparameter (model.norm_eps), applied in double.
#pragma once

namespace gossamer::kernels::cpu {

template <class T>
void rmsnorm_forward(T* out,        // (N,C)
                     T* rstd,       // (N)
                     const T* inp,  // (N,C)
                     const T* w,    // (C)
                     int N, int C, double eps);

template <class T>
void rmsnorm_backward(T* dinp,        // (N,C) +=
                      T* dw,          // (C)   +=
                      const T* dout,  // (N,C)
                      const T* inp,   // (N,C)
                      const T* w,     // (C)
                      const T* rstd,  // (N)
                      int N, int C);

}  // namespace gossamer::kernels::cpu
