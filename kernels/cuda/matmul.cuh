// CUDA versions of kernels/cpu/matmul.h, nn.Linear layout: out(N,OC) = inp(N,C) w(OC,C)^T + bias.
//   forward:  out assigned (bias may be null, else added by cuBLASLt's bias epilogue)
//   backward: dinp += dout w;  dw += dout^T inp;  dbias += sum_n dout      (all accumulate;
//             dinp / dbias may be null)
// The products through cuBLASLt in fp32 (CUBLAS_COMPUTE_32F: no TF32, so the op test's fp32
// tolerances hold; bf16 comes with mixed precision), row-major operands passed as their
// column-major transposes, each operand's actual alignment given to cuBLASLt (parameter views
// can be only 4-byte aligned); bias by the epilogue when 16-byte aligned, else by a kernel; dbias
// in two stages (column sums over fixed slices of 256 rows into cuda_context's workspace, then
// the slices added in order per column: deterministic).
// cuBLAS gives the same bits run to run on one GPU model for one configuration (its
// documentation); the algorithm is cuBLASLt's first heuristic choice for the shape, operand
// alignments and epilogue, cached with the descriptors per shape at its first product (logging
// the choice is future work).
// Device pointers, cuda_context's stream().
#pragma once

namespace gossamer::kernels::cuda {

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C,
                    int OC);
void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                     const float* w, int N, int C, int OC);

}  // namespace gossamer::kernels::cuda
