// Linear layer in nn.Linear layout:  out(N,OC) = inp(N,C) * w(OC,C)^T + bias(OC).
//   forward:  out assigned; bias may be null (no bias).
//   backward: dinp += dout * w;  dw += dout^T * inp;  dbias += sum_n dout   (all accumulate)
//             dinp may be null (input needs no gradient); dbias null when there is no bias.
// The products go through gemm() (gemm.h).
// matmul_bf16_*: the same with bf16 operands, fp32 accumulation (kernels/ops.h): inp, and dout
// for dinp and dw, rounded to bf16 (nearest, ties to even), w given in bf16. float, where the
// CPU has bf16 instructions (gemm_bf16_native()): the rounded operands as bf16 in the scratch
// and oneDNN's bf16 matmul (gemm_bf16). Otherwise, and always for double: the rounded operands
// widened back to T in the scratch and the products as above. Either way each product is exact
// and the sums are T's (in the library's order): the reference of a GPU's bf16 tensor-core
// product. Scratch: matmul_bf16_scratch_bytes<T> bytes (the layout is the path's). bias and
// dbias as above (dbias from the unrounded dout).
#pragma once

#include <cstddef>
#include <cstdint>

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

template <class T>
void matmul_bf16_forward(T* out, const T* inp, const uint16_t* w, const T* bias, int N, int C,
                         int OC, void* scratch);

template <class T>
void matmul_bf16_backward(T* dinp, T* dw, T* dbias, const T* dout, const T* inp, const uint16_t* w,
                          int N, int C, int OC, void* scratch);

// Bytes of scratch the bf16 ops need for one product: bf16 copies of inp and dout (native), or T
// copies of inp, w and dout (emulated).
template <class T>
size_t matmul_bf16_scratch_bytes(int N, int C, int OC);

}  // namespace gossamer::kernels::cpu
