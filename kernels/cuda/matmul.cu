// Implementation of matmul.cuh. One cuBLASLt handle and a 32 MiB workspace per process, made at
// the first call.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "core/error.h"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/matmul.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr unsigned kThreads = 256;

void lt_check(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  char msg[256];
  std::snprintf(msg, sizeof msg, "cuBLASLt %s: status %d", what, int(st));
  throw Error(msg);
}

struct Lt {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

Lt& lt() {
  static Lt s = [] {
    Lt l;
    lt_check(cublasLtCreate(&l.handle), "cublasLtCreate");
    GOSSAMER_CUDA_CHECK(cudaMalloc(&l.workspace, kWorkspaceBytes));
    return l;
  }();
  return s;
}

// The largest power of two (at most 256) that divides p's address: cuBLASLt assumes 256-byte
// aligned operands unless told otherwise, and parameter views into one packed buffer are often
// only 4-byte aligned.
uint32_t alignment(const void* p) {
  uint32_t a = 256;
  while (a > 4 && reinterpret_cast<uintptr_t>(p) % a != 0) a /= 2;
  return a;
}

// D (m x n, column-major, ld m) = op(A) op(B) + beta D [+ bias(m)]; A is m x k after op, B k x n.
// bias must be 16-byte aligned (the epilogue's requirement); the caller adds it otherwise.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* A, int lda, const float* B,
          int ldb, float* D, float beta, const float* bias) {
  Lt& l = lt();
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  auto cleanup = [&] {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (desc) cublasLtMatmulDescDestroy(desc);
  };
  try {
    lt_check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
    const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
             "TRANSA");
    lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
             "TRANSB");
    if (bias) {
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      lt_check(
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
          "EPILOGUE");
      lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                              sizeof bias),
               "BIAS_POINTER");
    }
    lt_check(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, trans_a ? k : m, trans_a ? m : k, lda),
             "layout A");
    lt_check(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, trans_b ? n : k, trans_b ? k : n, ldb),
             "layout B");
    lt_check(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, m), "layout D");
    lt_check(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &kWorkspaceBytes, sizeof kWorkspaceBytes),
             "MAX_WORKSPACE_BYTES");
    const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> aligned[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, A},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, B},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, D},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, D}};
    for (auto [attr, ptr] : aligned) {
      const uint32_t a = alignment(ptr);
      lt_check(cublasLtMatmulPreferenceSetAttribute(pref, attr, &a, sizeof a), "MIN_ALIGNMENT");
    }
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    lt_check(cublasLtMatmulAlgoGetHeuristic(l.handle, desc, la, lb, ld, ld, pref, 1, &heur, &found),
             "AlgoGetHeuristic");
    if (found == 0) lt_check(CUBLAS_STATUS_NOT_SUPPORTED, "AlgoGetHeuristic: no algorithm");
    const float alpha = 1.0f;
    lt_check(cublasLtMatmul(l.handle, desc, &alpha, A, la, B, lb, &beta, D, ld, D, ld, &heur.algo,
                            l.workspace, kWorkspaceBytes, stream()),
             "Matmul");
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
}

// out[n, oc] = bias[oc] (assign) or out[n, oc] += bias[oc].
__global__ void bias_kernel(float* out, const float* bias, size_t n, int OC, bool assign) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float b = bias ? bias[i % OC] : 0.0f;
    out[i] = assign ? b : out[i] + b;
  }
}

// dbias[oc] += sum_n dout[n, oc], rows in order (one thread per column: deterministic, and slow
// for large N with small OC; a two-stage column sum as in layernorm.cu is the fix).
__global__ void bias_grad_kernel(float* dbias, const float* dout, int N, int OC) {
  const int oc = blockIdx.x * kThreads + threadIdx.x;
  if (oc >= OC) return;
  float s = 0;
  for (int n = 0; n < N; ++n) s += dout[size_t(n) * OC + oc];
  dbias[oc] += s;
}

}  // namespace

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C,
                    int OC) {
  const size_t n = size_t(N) * OC;
  if (n == 0) return;
  if (C == 0) {  // an empty product: out = bias (or 0)
    bias_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, bias, n, OC, true);
    GOSSAMER_CUDA_LAUNCHED("bias_kernel");
    return;
  }
  const bool epilogue = bias && alignment(bias) >= 16;
  // out^T (OC x N) = w (C x OC stored, transposed) . inp^T (C x N stored)
  gemm(true, false, OC, N, C, w, C, inp, C, out, 0.0f, epilogue ? bias : nullptr);
  if (bias && !epilogue) {
    bias_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, bias, n, OC, false);
    GOSSAMER_CUDA_LAUNCHED("bias_kernel");
  }
}

void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                     const float* w, int N, int C, int OC) {
  if (size_t(N) * OC == 0) return;
  if (C > 0) {
    // dinp^T (C x N) += w^T (C x OC stored) . dout^T (OC x N stored)
    if (dinp) gemm(false, false, C, N, OC, w, C, dout, OC, dinp, 1.0f, nullptr);
    // dw^T (C x OC) += inp^T (C x N stored) . dout (OC x N stored, transposed)
    gemm(false, true, C, OC, N, inp, C, dout, OC, dw, 1.0f, nullptr);
  }
  if (dbias) {
    bias_grad_kernel<<<(OC + kThreads - 1) / kThreads, kThreads, 0, stream()>>>(dbias, dout, N, OC);
    GOSSAMER_CUDA_LAUNCHED("bias_grad_kernel");
  }
}

}  // namespace gossamer::kernels::cuda
