// Implementation of matmul.cuh. One cuBLASLt handle and a 32 MiB workspace per process, made at
// the first call; per product shape, the descriptors and cuBLASLt's algorithm, made at the
// shape's first product and reused.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/elementwise.cuh"
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
// only 4-byte aligned (2-byte for views into the bf16 mirror).
uint32_t alignment(const void* p) {
  uint32_t a = 256;
  while (a > 2 && reinterpret_cast<uintptr_t>(p) % a != 0) a /= 2;
  return a;
}

// A product's shape and what cuBLASLt's choice depends on: the plan cache's key.
struct GemmKey {
  bool trans_a, trans_b, bias, bf16;  // bf16: A and B are bf16 (C and D fp32 always)
  int m, n, k, lda, ldb;
  uint32_t align_a, align_b, align_d;
  auto tied() const {
    return std::tie(trans_a, trans_b, bias, bf16, m, n, k, lda, ldb, align_a, align_b, align_d);
  }
  bool operator<(const GemmKey& o) const { return tied() < o.tied(); }
};

// The descriptors and the heuristic's algorithm for one key, made at its first product and kept
// for the process (host objects; never destroyed, so no order problem at exit).
struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

void destroy(GemmPlan& p) {
  if (p.ld) cublasLtMatrixLayoutDestroy(p.ld);
  if (p.lb) cublasLtMatrixLayoutDestroy(p.lb);
  if (p.la) cublasLtMatrixLayoutDestroy(p.la);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
}

GemmPlan make_plan(const GemmKey& key) {
  GemmPlan p;
  cublasLtMatmulPreference_t pref = nullptr;
  try {
    lt_check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
    const cublasOperation_t ta = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    lt_check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
             "TRANSA");
    lt_check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
             "TRANSB");
    if (key.bias) {
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      lt_check(
          cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
          "EPILOGUE");
    }
    const int m = key.m, n = key.n, k = key.k;
    const cudaDataType_t ab = key.bf16 ? CUDA_R_16BF : CUDA_R_32F;
    lt_check(
        cublasLtMatrixLayoutCreate(&p.la, ab, key.trans_a ? k : m, key.trans_a ? m : k, key.lda),
        "layout A");
    lt_check(
        cublasLtMatrixLayoutCreate(&p.lb, ab, key.trans_b ? n : k, key.trans_b ? k : n, key.ldb),
        "layout B");
    lt_check(cublasLtMatrixLayoutCreate(&p.ld, CUDA_R_32F, m, n, m), "layout D");
    lt_check(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &kWorkspaceBytes, sizeof kWorkspaceBytes),
             "MAX_WORKSPACE_BYTES");
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligned[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d}};
    for (auto [attr, a] : aligned)
      lt_check(cublasLtMatmulPreferenceSetAttribute(pref, attr, &a, sizeof a), "MIN_ALIGNMENT");
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    lt_check(cublasLtMatmulAlgoGetHeuristic(lt().handle, p.desc, p.la, p.lb, p.ld, p.ld, pref, 1,
                                            &heur, &found),
             "AlgoGetHeuristic");
    if (found == 0) lt_check(CUBLAS_STATUS_NOT_SUPPORTED, "AlgoGetHeuristic: no algorithm");
    p.algo = heur.algo;
  } catch (const std::exception& e) {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    destroy(p);
    // Name the product: a shape or alignment cuBLASLt has no algorithm for is otherwise opaque.
    throw Error(std::string(e.what()) + " (cuBLASLt product m " + std::to_string(key.m) + ", n " +
                std::to_string(key.n) + ", k " + std::to_string(key.k) + ", lda " +
                std::to_string(key.lda) + ", ldb " + std::to_string(key.ldb) +
                (key.bf16 ? ", bf16" : ", fp32") + (key.trans_a ? ", A^T" : "") +
                (key.trans_b ? ", B^T" : "") + (key.bias ? ", bias epilogue" : "") +
                ", alignments A " + std::to_string(key.align_a) + " B " +
                std::to_string(key.align_b) + " D " + std::to_string(key.align_d) + " bytes)");
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return p;
}

// D (m x n, column-major, ld m) = op(A) op(B) + beta D [+ bias(m)]; A is m x k after op, B k x n;
// A and B fp32, or bf16 when `bf16`; D and bias fp32. bias must be 16-byte aligned (the
// epilogue's requirement); the caller adds it otherwise. The descriptors and algorithm come from
// a per-shape cache (ops run from one host thread).
void gemm(bool trans_a, bool trans_b, int m, int n, int k, const void* A, int lda, const void* B,
          int ldb, float* D, float beta, const float* bias, bool bf16 = false) {
  static std::map<GemmKey, GemmPlan> plans;
  const GemmKey key{trans_a, trans_b, bias != nullptr, bf16,         m,           n, k,
                    lda,     ldb,     alignment(A),    alignment(B), alignment(D)};
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make_plan(key)).first;
  const GemmPlan& p = it->second;
  if (bias) {
    lt_check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof bias),
             "BIAS_POINTER");
  }
  const float alpha = 1.0f;
  lt_check(cublasLtMatmul(lt().handle, p.desc, &alpha, A, p.la, B, p.lb, &beta, D, p.ld, D, p.ld,
                          &p.algo, lt().workspace, kWorkspaceBytes, stream()),
           "Matmul");
}

__global__ void bias_kernel(float* out, const float* bias, size_t n, int OC, bool assign) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float b = bias ? bias[i % OC] : 0.0f;
    out[i] = assign ? b : out[i] + b;
  }
}

// dbias[oc] += sum_n dout[n, oc], in two stages as layernorm.cu's dw: block (p, cb) sums rows
// [p * kRowsPerPartial, ...) of columns cb * kThreads + t in order into part[p, oc]; then one
// thread per column adds the parts in order. Deterministic (a fixed order per shape), and
// N / kRowsPerPartial times the parallelism of one thread per column.
constexpr int kRowsPerPartial = 256;

__global__ void bias_grad_partial_kernel(float* part, const float* dout, int N, int OC) {
  const int oc = blockIdx.y * kThreads + threadIdx.x;
  if (oc >= OC) return;
  const int r0 = blockIdx.x * kRowsPerPartial, r1 = min(N, r0 + kRowsPerPartial);
  float s = 0;
  for (int n = r0; n < r1; ++n) s += dout[size_t(n) * OC + oc];
  part[size_t(blockIdx.x) * OC + oc] = s;
}

__global__ void bias_grad_sum_kernel(float* dbias, const float* part, int parts, int OC) {
  const int oc = blockIdx.x * kThreads + threadIdx.x;
  if (oc >= OC) return;
  float s = 0;
  for (int p = 0; p < parts; ++p) s += part[size_t(p) * OC + oc];
  dbias[oc] += s;
}

// dbias[oc] += sum_n dout[n, oc] by the two kernels above.
void bias_backward(float* dbias, const float* dout, int N, int OC) {
  const int parts = (N + kRowsPerPartial - 1) / kRowsPerPartial;
  const unsigned column_blocks = (OC + kThreads - 1) / kThreads;
  auto* part = static_cast<float*>(workspace(size_t(parts) * OC * sizeof(float)));
  bias_grad_partial_kernel<<<dim3(parts, column_blocks), kThreads, 0, stream()>>>(part, dout, N,
                                                                                  OC);
  GOSSAMER_CUDA_LAUNCHED("bias_grad_partial_kernel");
  bias_grad_sum_kernel<<<column_blocks, kThreads, 0, stream()>>>(dbias, part, parts, OC);
  GOSSAMER_CUDA_LAUNCHED("bias_grad_sum_kernel");
}

// out(N,OC) = inp w^T + bias with w and inp fp32, or bf16 when `bf16`; C > 0.
void forward_product(float* out, const void* inp, const void* w, const float* bias, int N, int C,
                     int OC, bool bf16) {
  const bool epilogue = bias && alignment(bias) >= 16;
  // out^T (OC x N) = w (C x OC stored, transposed) . inp^T (C x N stored)
  gemm(true, false, OC, N, C, w, C, inp, C, out, 0.0f, epilogue ? bias : nullptr, bf16);
  if (bias && !epilogue) {
    const size_t n = size_t(N) * OC;
    bias_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, bias, n, OC, false);
    GOSSAMER_CUDA_LAUNCHED("bias_kernel");
  }
}

// An empty product (C = 0): out = bias (or 0).
void empty_forward(float* out, const float* bias, int N, int OC) {
  const size_t n = size_t(N) * OC;
  bias_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, bias, n, OC, true);
  GOSSAMER_CUDA_LAUNCHED("bias_kernel");
}

// The scratch of the bf16 products: rounded copies of dout (N,OC) and inp (N,C), each at a
// 256-byte aligned offset (128 bf16).
size_t aligned_elems(size_t n) {
  return (n + 127) / 128 * 128;
}

}  // namespace

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C,
                    int OC) {
  if (size_t(N) * OC == 0) return;
  if (C == 0) return empty_forward(out, bias, N, OC);
  forward_product(out, inp, w, bias, N, C, OC, false);
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
  if (dbias) bias_backward(dbias, dout, N, OC);
}

size_t matmul_bf16_scratch_bytes(int N, int C, int OC) {
  return sizeof(uint16_t) * (aligned_elems(size_t(N) * OC) + aligned_elems(size_t(N) * C));
}

void matmul_bf16_forward(float* out, const float* inp, const uint16_t* w, const float* bias, int N,
                         int C, int OC, void* scratch) {
  const size_t n = size_t(N) * OC;
  if (n == 0) return;
  if (C == 0) return empty_forward(out, bias, N, OC);
  auto* inp16 = static_cast<uint16_t*>(scratch) + aligned_elems(n);
  to_bf16(inp16, inp, size_t(N) * C);
  forward_product(out, inp16, w, bias, N, C, OC, true);
}

void matmul_bf16_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                          const uint16_t* w, int N, int C, int OC, void* scratch) {
  const size_t n = size_t(N) * OC;
  if (n == 0) return;
  if (C > 0) {
    auto* dout16 = static_cast<uint16_t*>(scratch);
    auto* inp16 = dout16 + aligned_elems(n);
    to_bf16(dout16, dout, n);
    to_bf16(inp16, inp, size_t(N) * C);
    if (dinp) gemm(false, false, C, N, OC, w, C, dout16, OC, dinp, 1.0f, nullptr, true);
    gemm(false, true, C, OC, N, inp16, C, dout16, OC, dw, 1.0f, nullptr, true);
  }
  if (dbias) bias_backward(dbias, dout, N, OC);
}

}  // namespace gossamer::kernels::cuda
