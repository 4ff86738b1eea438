// gemm() by plain loops, for the GPU-only build (cmake/gpu_only.cmake) alone: there the CPU ops
// are the reference the CUDA op tests compare against, and the machine has no BLAS. Same
// contract as gemm.h's gemm() (row-major, op(X) = X or X^T, C = alpha op(A) op(B) + beta C),
// accumulated in the element type in k order: deterministic, slow, exact enough for the op
// tests' shapes. Never part of the normal build (CMakeLists.txt compiles gemm.cpp there).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cpu/gemm.h"

namespace gossamer::kernels::cpu {

template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
          int ldb, T beta, T* C, int ldc) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      T acc = 0;
      for (int k = 0; k < K; ++k) {
        const T a = trans_a ? A[size_t(k) * lda + i] : A[size_t(i) * lda + k];
        const T b = trans_b ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j];
        acc += a * b;
      }
      T& c = C[size_t(i) * ldc + j];
      c = beta == T(0) ? alpha * acc : alpha * acc + beta * c;
    }
}

// bf16 products by the same loops; not native (no oneDNN here), so the bf16 matmul ops take their
// emulation and never call gemm_bf16, which still computes what gemm.h says.
const std::string& gemm_bf16_implementation() {
  static const std::string name = "none (GPU-only build: plain loops)";
  return name;
}
bool gemm_bf16_native() {
  return false;
}

void gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, const uint16_t* A, int lda,
               const uint16_t* B, int ldb, float beta, float* C, int ldc) {
  const auto widen = [](uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); };
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0;
      for (int k = 0; k < K; ++k)
        acc += widen(trans_a ? A[size_t(k) * lda + i] : A[size_t(i) * lda + k]) *
               widen(trans_b ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j]);
      float& c = C[size_t(i) * ldc + j];
      c = beta == 0.0f ? acc : acc + beta * c;
    }
}

template void gemm<float>(bool, bool, int, int, int, float, const float*, int, const float*, int,
                          float, float*, int);
template void gemm<double>(bool, bool, int, int, int, double, const double*, int, const double*,
                           int, double, double*, int);

}  // namespace gossamer::kernels::cpu
