// Dense matrix product on the CPU, row-major:  C(M,N) = alpha * op(A)(M,K) * op(B)(K,N) + beta * C.
// op(X) is X or X^T (trans_*). lda/ldb/ldc are row strides of the matrices as stored.
// float runs on the selected backend (oneDNN or OpenBLAS, see GemmBackend); double always
// runs on OpenBLAS (used by the finite-difference checks). Results are deterministic for a
// fixed backend, shape and thread count.
#pragma once

#include <string>

namespace gossamer::kernels::cpu {

enum class GemmBackend {
  GEMM_BACKEND_AUTO,      // a fixed per-shape rule (see gemm.cpp), measured on our machines
  GEMM_BACKEND_OPENBLAS,  // cblas_sgemm
  GEMM_BACKEND_ONEDNN,    // oneDNN matmul primitives, created once per shape and cached
};

// Process-wide choice, set once at start-up by the program (before any gemm call).
void gemm_set_backend(GemmBackend backend);
GemmBackend gemm_backend();
GemmBackend gemm_backend_from_string(
    const std::string& name);  // "auto"|"openblas"|"onednn"; throws
const char* gemm_backend_name(GemmBackend backend);
// Human-readable description of the libraries and threading in use (logged at start-up).
std::string gemm_describe();

// The backend a float gemm with these arguments actually runs on: AUTO resolved by the fixed
// per-shape rule, and OPENBLAS wherever oneDNN is not used (alpha != 1, beta not in {0,1}, K == 0).
// A pure function of its arguments and the process-wide choice; used by benches, tests and logs.
GemmBackend gemm_backend_for(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                             float beta);

// Median sgemm rate (GFLOP/s) of the current backend on a large GPT-2 training shape
// (M=2048, N=3072, K=768, forward layout), after one warm-up call. Allocates its own buffers
// and takes about a second: call it once at start-up (MFU denominator), never per step.
double gemm_peak_gflops_measured(int repeats = 5);

template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
          int ldb, T beta, T* C, int ldc);

}  // namespace gossamer::kernels::cpu
