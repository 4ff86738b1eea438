// Linear layer in nn.Linear layout:  out(N,OC) = inp(N,C) * w(OC,C)^T + bias(OC).
//   forward:  out assigned; bias may be null (no bias).
//   backward: dinp += dout * w;  dw += dout^T * inp;  dbias += sum_n dout   (all accumulate)
//             dinp may be null (input needs no gradient); dbias null when there is no bias.
// The products go through gemm() (gemm.h).
#pragma once

namespace gossamer::kernels::cpu {

template <class T>
void matmul_forward(T* out,         // (N,OC)
                    const T* inp,   // (N,C)
                    const T* w,     // (OC,C)
                    const T* bias,  // (OC) or nullptr
                    int N, int C, int OC);

template <class T>
void matmul_backward(T* dinp,        // (N,C)  += , or nullptr
                     T* dw,          // (OC,C) +=
                     T* dbias,       // (OC)   += , or nullptr
                     const T* dout,  // (N,OC)
                     const T* inp,   // (N,C)
                     const T* w,     // (OC,C)
                     int N, int C, int OC);

}  // namespace gossamer::kernels::cpu
