// CUDA versions of kernels/cpu/matmul.h, nn.Linear layout: out(N,OC) = inp(N,C) w(OC,C)^T + bias.
//   forward:  out assigned (bias may be null, else added by cuBLASLt's bias epilogue)
//   backward: dinp += dout w;  dw += dout^T inp;  dbias += sum_n dout      (all accumulate;
//             dinp / dbias may be null)
// The products through cuBLASLt in fp32 (CUBLAS_COMPUTE_32F: no TF32, so the op test's fp32
// tolerances hold; bf16 operands are the matmul_bf16 ops below), row-major operands passed as their
// column-major transposes, each operand's actual alignment given to cuBLASLt (parameter views
// can be only 4-byte aligned); bias by the epilogue when 16-byte aligned, else by a kernel; dbias
// in two stages (column sums over fixed slices of 256 rows into cuda_context's workspace, then
// the slices added in order per column: deterministic).
// cuBLAS gives the same bits run to run on one GPU model for one configuration (its
// documentation); the algorithm is cuBLASLt's first heuristic choice for the shape, operand
// alignments and epilogue, cached with the descriptors per shape at its first product (logging
// the choice is future work).
// matmul_bf16_*: bf16 operands on the tensor cores (A and B CUDA_R_16BF, C and D fp32,
// CUBLAS_COMPUTE_32F): inp, and dout for dinp and dw, rounded to bf16 into the scratch by the
// to_bf16 kernel (kernels/cpu/bf16 rule, the CPU op's bits), w given in bf16; out, dinp, dw,
// bias and dbias fp32 as above (dbias from the unrounded dout). Scratch: the rounded copies at
// 256-byte aligned offsets, matmul_bf16_scratch_bytes() bytes.
// Device pointers, cuda_context's stream().
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels::cuda {

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C,
                    int OC);
void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                     const float* w, int N, int C, int OC);

void matmul_bf16_forward(float* out, const float* inp, const uint16_t* w, const float* bias, int N,
                         int C, int OC, void* scratch);
void matmul_bf16_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                          const uint16_t* w, int N, int C, int OC, void* scratch);
size_t matmul_bf16_scratch_bytes(int N, int C, int OC);

}  // namespace gossamer::kernels::cuda
