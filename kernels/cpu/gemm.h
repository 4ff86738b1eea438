// Dense matrix product on the CPU, row-major:  C(M,N) = alpha * op(A)(M,K) * op(B)(K,N) + beta * C.
// op(X) is X or X^T (trans_*). lda/ldb/ldc are row strides of the matrices as stored.
// float runs on the selected backend (oneDNN or OpenBLAS, see GemmBackend); double always
// runs on OpenBLAS (used by the finite-difference checks); gemm_bf16 (bf16 operands) on oneDNN.
// Results are deterministic for a fixed backend, shape and thread count.
#pragma once

#include <cstdint>
#include <string>

namespace gossamer::kernels::cpu {

enum class GemmBackend {
  GEMM_BACKEND_AUTO,      // a fixed per-shape rule (see gemm.cpp), measured on our machines
  GEMM_BACKEND_OPENBLAS,  // cblas_sgemm
  GEMM_BACKEND_ONEDNN,    // oneDNN: cached matmul primitives, or dnnl_sgemm (see GemmImpl)
};

// The calling thread's choice (AUTO until set): a run sets it on its own thread at start-up
// (configure_cpu_kernels), so two runs on two threads of one process each keep their own. gemm
// is only called from a run's thread, never from inside a parallel region.
void gemm_set_backend(GemmBackend backend);
GemmBackend gemm_backend();
// "auto" | "openblas" | "onednn"; anything else throws gossamer::Error.
GemmBackend gemm_backend_from_string(const std::string& name);
const char* gemm_backend_name(GemmBackend backend);
// Human-readable description of the libraries and threading in use (logged at start-up).
std::string gemm_describe();

// The implementations behind the backends. GEMM_BACKEND_ONEDNN runs a oneDNN matmul primitive
// or oneDNN's sgemm, GEMM_BACKEND_AUTO any of the three, each by a fixed per-shape rule
// (gemm.cpp); alpha != 1, beta not in {0,1} and K == 0 always run on OpenBLAS.
enum class GemmImpl {
  GEMM_IMPL_OPENBLAS,       // cblas_sgemm
  GEMM_IMPL_ONEDNN_MATMUL,  // dnnl::matmul primitive, created once per shape and cached
  GEMM_IMPL_ONEDNN_SGEMM,   // dnnl_sgemm
};
const char* gemm_impl_name(GemmImpl impl);
// The implementation gemm<float> uses for these arguments under the current backend: a pure
// function of its arguments and of the process-wide backend (for benches, tests and logs).
GemmImpl gemm_impl_for(bool trans_a, bool trans_b, int M, int N, int K, float alpha, float beta);
// The library gemm_impl_for() resolves to: GEMM_BACKEND_OPENBLAS or GEMM_BACKEND_ONEDNN.
GemmBackend gemm_backend_for(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                             float beta);
// gemm<float> on the given implementation, whatever the backend (benches and tests). Every
// implementation accepts any alpha and beta; K == 0 (C = beta * C) always runs on OpenBLAS.
void gemm_with_impl(GemmImpl impl, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                    const float* A, int lda, const float* B, int ldb, float beta, float* C,
                    int ldc);

// Best sgemm rate (GFLOP/s) of the current backend on a large GPT-2 training shape
// (M=2048, N=3072, K=768, forward layout) over `repeats` calls, after a warm-up of at least
// three calls and 0.2 s (interference only slows a call, so the fastest is the estimate).
// Allocates its own buffers and takes about a second: call it once at start-up (MFU
// denominator), never per step.
double gemm_peak_gflops_measured(int repeats = 5);

template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
          int ldb, T beta, T* C, int ldc);

// C = op(A) op(B) + beta C (beta 0 or 1) with A and B bf16 (their bits, uint16_t) and C fp32:
// a oneDNN matmul primitive (cached per shape as above), whatever the gemm backend. Each product
// of two bf16 values is exact and the sums are fp32, in oneDNN's order.
void gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, const uint16_t* A, int lda,
               const uint16_t* B, int ldb, float beta, float* C, int ldc);
// oneDNN's name for the implementation it chooses for bf16 products on this CPU (probed once),
// and whether they are native: the ISA oneDNN uses has bf16 instructions (avx512_core_bf16 or
// AMX) and the probe is not its slow reference code ("ref"; a product that still gets it is
// logged as a warning). The bf16 matmul ops use gemm_bf16 only when native.
const std::string& gemm_bf16_implementation();
bool gemm_bf16_native();

}  // namespace gossamer::kernels::cpu
