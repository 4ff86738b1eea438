// A float op table whose entries run the CUDA kernels on host buffers: each call copies every
// buffer it is given to the GPU (inside guard bands of sentinel bytes), runs the kernel, waits,
// checks the guard bands, and copies every buffer back (inputs too, so that the op test
// harness's "inputs unchanged" check sees a kernel that writes into an input). Host pointers
// passed twice to one call (in-place ops) map to one device buffer, so aliasing is preserved.
// This is how the table-driven op tests (tests/unit/op_test_harness.h) check CUDA kernels
// against the double CPU reference unchanged. Buffers an op indexes (the sparse optimizer
// updates' parameters and state) are staged up to the largest index used. Every entry of the
// table is set. Test code; header-only; needs a GPU to call.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/memory.h"
#include "kernels/cuda/adam.cuh"
#include "kernels/cuda/adam_sparse.cuh"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/block_ops.cuh"
#include "kernels/cuda/copy_runs.cuh"
#include "kernels/cuda/crossentropy.cuh"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/encoder.cuh"
#include "kernels/cuda/gelu.cuh"
#include "kernels/cuda/layernorm.cuh"
#include "kernels/cuda/mask_score.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/outer_update.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/sparse_select.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/ops.h"

namespace gossamer::cuda_test {

inline constexpr size_t kGuardBytes = 256;
// 0xFF: every float read past a buffer is a NaN and every int32 is -1, so a kernel that reads
// out of bounds fails the harness's NaN / tolerance checks instead of reading ~0.
inline constexpr unsigned char kGuardByte = 0xFF;

// Bytes every staged buffer starts after its guard band (0: 256-byte aligned, as cudaMalloc;
// 4: only 4-byte aligned, as views into a packed parameter buffer can be). Set by StageOffset.
inline size_t g_stage_offset = 0;
class StageOffset {
 public:
  explicit StageOffset(size_t bytes) : saved_(g_stage_offset) { g_stage_offset = bytes; }
  ~StageOffset() { g_stage_offset = saved_; }
  StageOffset(const StageOffset&) = delete;
  StageOffset& operator=(const StageOffset&) = delete;

 private:
  size_t saved_;
};

// The device copies of one op call's buffers.
class Stager {
 public:
  explicit Stager(const char* op) : op_(op) {}
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;
  ~Stager() {
    for (auto& b : bufs_) cudaFree(b.base);
  }

  // The device copy of host buffer p of n elements (nullptr stays nullptr).
  template <class T>
  T* operator()(const T* p, size_t n) {
    if (p == nullptr) return nullptr;
    const size_t bytes = n * sizeof(T);
    for (auto& b : bufs_) {
      if (b.host == p) {
        EXPECT_EQ(b.bytes, bytes) << op_ << ": one host buffer staged with two sizes";
        return reinterpret_cast<T*>(b.data());
      }
    }
    Buf b{const_cast<void*>(static_cast<const void*>(p)), bytes, g_stage_offset, nullptr};
    const size_t total = b.front() + bytes + kGuardBytes;
    check(cudaMalloc(reinterpret_cast<void**>(&b.base), total), "cudaMalloc");
    check(cudaMemset(b.base, kGuardByte, total), "cudaMemset");
    if (bytes) check(cudaMemcpy(b.data(), p, bytes, cudaMemcpyHostToDevice), "H2D");
    // The kernel may run on a stream that does not wait for the legacy default stream.
    check(cudaDeviceSynchronize(), "staging");
    bufs_.push_back(b);
    return reinterpret_cast<T*>(b.data());
  }

  // Waits for the kernels, checks every guard band and copies every buffer back.
  void finish() {
    check(cudaDeviceSynchronize(), "kernel");
    std::vector<unsigned char> guard;
    for (auto& b : bufs_) {
      const std::pair<size_t, size_t> bands[] = {{0, b.front()},
                                                 {b.front() + b.bytes, kGuardBytes}};
      for (auto [at, len] : bands) {
        guard.resize(len);
        check(cudaMemcpy(guard.data(), b.base + at, len, cudaMemcpyDeviceToHost), "D2H");
        size_t bad = 0;
        for (unsigned char c : guard) bad += c != kGuardByte;
        EXPECT_EQ(bad, 0u) << op_ << ": wrote " << (at ? "after" : "before") << " a buffer";
      }
      if (b.bytes) check(cudaMemcpy(b.host, b.data(), b.bytes, cudaMemcpyDeviceToHost), "D2H");
    }
  }

 private:
  struct Buf {
    void* host;
    size_t bytes;
    size_t offset;        // g_stage_offset when staged
    unsigned char* base;  // guard band (kGuardBytes + offset), the data, guard band (kGuardBytes)
    size_t front() const { return kGuardBytes + offset; }
    unsigned char* data() const { return base + front(); }
  };
  void check(cudaError_t e, const char* what) {
    kernels::cuda::cuda_check(e, (std::string(op_) + ": " + what).c_str(), __FILE__, __LINE__);
  }
  const char* op_;
  std::vector<Buf> bufs_;
};

namespace staged {

namespace k = kernels::cuda;
using kernels::CopyRun;

inline void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                            int B, int T, int C) {
  // wte / wpe sizes: the kernel reads rows up to the largest token / T - 1.
  int32_t vp = 0;
  for (size_t i = 0; i < size_t(B) * T; ++i) vp = tokens[i] + 1 > vp ? tokens[i] + 1 : vp;
  Stager s("encoder_forward");
  const size_t bt = size_t(B) * T;
  k::encoder_forward(s(out, bt * C), s(tokens, bt), s(wte, size_t(vp) * C), s(wpe, size_t(T) * C),
                     B, T, C);
  s.finish();
}
inline void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                             int B, int T, int C) {
  int32_t vp = 0;
  for (size_t i = 0; i < size_t(B) * T; ++i) vp = tokens[i] + 1 > vp ? tokens[i] + 1 : vp;
  Stager s("encoder_backward");
  const size_t bt = size_t(B) * T;
  k::encoder_backward(s(dwte, size_t(vp) * C), s(dwpe, size_t(T) * C), s(dout, bt * C),
                      s(tokens, bt), B, T, C);
  s.finish();
}
inline void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                              const float* w, const float* b, int N, int C) {
  Stager s("layernorm_forward");
  const size_t nc = size_t(N) * C;
  k::layernorm_forward(s(out, nc), s(mean, N), s(rstd, N), s(inp, nc), s(w, C), s(b, C), N, C);
  s.finish();
}
inline void layernorm_backward(float* dinp, float* dw, float* db, const float* dout,
                               const float* inp, const float* w, const float* mean,
                               const float* rstd, int N, int C) {
  Stager s("layernorm_backward");
  const size_t nc = size_t(N) * C;
  k::layernorm_backward(s(dinp, nc), s(dw, C), s(db, C), s(dout, nc), s(inp, nc), s(w, C),
                        s(mean, N), s(rstd, N), N, C);
  s.finish();
}
inline void gelu_forward(float* out, const float* inp, size_t n) {
  Stager s("gelu_forward");
  k::gelu_forward(s(out, n), s(inp, n), n);
  s.finish();
}
inline void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
  Stager s("gelu_backward");
  k::gelu_backward(s(dinp, n), s(inp, n), s(dout, n), n);
  s.finish();
}
inline void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C,
                            double eps) {
  Stager s("rmsnorm_forward");
  const size_t nc = size_t(N) * C;
  k::rmsnorm_forward(s(out, nc), s(rstd, N), s(inp, nc), s(w, C), N, C, eps);
  s.finish();
}
inline void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp,
                             const float* w, const float* rstd, int N, int C) {
  Stager s("rmsnorm_backward");
  const size_t nc = size_t(N) * C;
  k::rmsnorm_backward(s(dinp, nc), s(dw, C), s(dout, nc), s(inp, nc), s(w, C), s(rstd, N), N, C);
  s.finish();
}
inline void rope_forward(float* x, int B, int T, int n_heads, int head_dim, int row_stride,
                         double theta) {
  Stager s("rope_forward");
  k::rope_forward(s(x, size_t(B) * T * row_stride), B, T, n_heads, head_dim, row_stride, theta);
  s.finish();
}
inline void rope_backward(float* dx, int B, int T, int n_heads, int head_dim, int row_stride,
                          double theta) {
  Stager s("rope_backward");
  k::rope_backward(s(dx, size_t(B) * T * row_stride), B, T, n_heads, head_dim, row_stride, theta);
  s.finish();
}
inline void swiglu_forward(float* out, const float* inp, int N, int F) {
  Stager s("swiglu_forward");
  k::swiglu_forward(s(out, size_t(N) * F), s(inp, size_t(N) * 2 * F), N, F);
  s.finish();
}
inline void swiglu_backward(float* dinp, const float* dout, const float* inp, int N, int F) {
  Stager s("swiglu_backward");
  k::swiglu_backward(s(dinp, size_t(N) * 2 * F), s(dout, size_t(N) * F), s(inp, size_t(N) * 2 * F),
                     N, F);
  s.finish();
}
inline void crossentropy_forward(float* losses, float* probs, const float* logits,
                                 const int32_t* targets, int N, int V, int Vp) {
  Stager s("crossentropy_forward");
  const size_t nv = size_t(N) * Vp;
  k::crossentropy_forward(s(losses, N), s(probs, nv), s(logits, nv), s(targets, N), N, V, Vp);
  s.finish();
}
inline void crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                                  float scale, int N, int V, int Vp) {
  Stager s("crossentropy_backward");
  const size_t nv = size_t(N) * Vp;
  k::crossentropy_backward(s(dlogits, nv), s(probs, nv), s(targets, N), scale, N, V, Vp);
  s.finish();
}
inline void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                          const int32_t* targets, float scale, int N, int V,
                                          int Vp) {
  Stager s("crossentropy_forward_backward");
  const size_t nv = size_t(N) * Vp;
  k::crossentropy_forward_backward(s(losses, N), s(dlogits, nv), s(logits, nv), s(targets, N),
                                   scale, N, V, Vp);
  s.finish();
}
inline void adamw_update(float* param, const float* grad, float* m, float* v, size_t n,
                         const kernels::AdamStep& hp) {
  Stager s("adamw_update");
  k::adamw_update(s(param, n), s(grad, n), s(m, n), s(v, n), n, hp);
  s.finish();
}
inline void adams_update(float* param, const float* grad, float* m, size_t n,
                         const kernels::AdamStep& hp) {
  Stager s("adams_update");
  k::adams_update(s(param, n), s(grad, n), s(m, n), n, hp);
  s.finish();
}
// Elements up to and including the largest index in idx[0..k) (0 when k = 0).
inline size_t extent(const uint32_t* idx, size_t k) {
  return k == 0 ? 0 : size_t(*std::max_element(idx, idx + k)) + 1;
}
inline void adamw_update_blocks(float* param, const float* grad, float* m, float* v,
                                const int32_t* blocks, const int32_t* steps, size_t n_blocks,
                                size_t block_size, size_t n_param, float* update_sq,
                                const kernels::AdamStep& hp) {
  Stager s("adamw_update_blocks");
  const size_t compact = n_blocks * block_size;
  k::adamw_update_blocks(s(param, n_param), s(grad, compact), s(m, compact), s(v, compact),
                         s(blocks, n_blocks), s(steps, n_blocks), n_blocks, block_size, n_param,
                         s(update_sq, n_blocks), hp);
  s.finish();
}
inline void adams_update_indexed(float* param, const uint32_t* pidx, const uint32_t* idx,
                                 const float* g, size_t k,
                                 const kernels::IndexedAdamsState<float>& st,
                                 const kernels::AdamStep& hp) {
  Stager s("adams_update_indexed");
  const size_t np = extent(pidx, k), ns = extent(idx, k);
  const kernels::IndexedAdamsState<float> dst{.m = s(st.m, ns),
                                              .last = s(st.last, ns),
                                              .decay = s(st.decay, ns),
                                              .den_sq = s(st.den_sq, ns),
                                              .dir = s(st.dir, np)};
  k::adams_update_indexed(s(param, np), s(pidx, k), s(idx, k), s(g, k), k, dst, hp);
  s.finish();
}
inline void adams_update_from_momentum(float* param, const uint32_t* pidx, float* m_last,
                                       float* last, const uint32_t* idx, const float* m_now,
                                       const uint8_t* decay, size_t k,
                                       const kernels::AdamStep& hp) {
  Stager s("adams_update_from_momentum");
  const size_t np = extent(pidx, k), ns = extent(idx, k);
  k::adams_update_from_momentum(s(param, np), s(pidx, k), s(m_last, ns), s(last, ns), s(idx, k),
                                s(m_now, k), s(decay, ns), k, hp);
  s.finish();
}
inline void attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C,
                              int NH, int NKV) {
  Stager s("attention_forward");
  const size_t bt = size_t(B) * T, R = C + 2 * size_t(NKV) * (C / NH);
  k::attention_forward(s(out, bt * C), s(saved, k::attention_saved_size(B, T, NH)), s(qkv, bt * R),
                       B, T, C, NH, NKV);
  s.finish();
}
inline void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                               const float* out, const float* saved, int B, int T, int C, int NH,
                               int NKV) {
  Stager s("attention_backward");
  const size_t bt = size_t(B) * T, R = C + 2 * size_t(NKV) * (C / NH);
  k::attention_backward(s(dqkv, bt * R), s(scratch, k::attention_scratch_size(B, T, NH)),
                        s(dout, bt * C), s(qkv, bt * R), s(out, bt * C),
                        s(saved, k::attention_saved_size(B, T, NH)), B, T, C, NH, NKV);
  s.finish();
}
inline void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N,
                           int C, int OC) {
  Stager s("matmul_forward");
  k::matmul_forward(s(out, size_t(N) * OC), s(inp, size_t(N) * C), s(w, size_t(OC) * C),
                    s(bias, OC), N, C, OC);
  s.finish();
}
inline void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout,
                            const float* inp, const float* w, int N, int C, int OC) {
  Stager s("matmul_backward");
  k::matmul_backward(s(dinp, size_t(N) * C), s(dw, size_t(OC) * C), s(dbias, OC),
                     s(dout, size_t(N) * OC), s(inp, size_t(N) * C), s(w, size_t(OC) * C), N, C,
                     OC);
  s.finish();
}
inline void matmul_bf16_forward(float* out, const float* inp, const uint16_t* w, const float* bias,
                                int N, int C, int OC, void* scratch) {
  Stager s("matmul_bf16_forward");
  k::matmul_bf16_forward(
      s(out, size_t(N) * OC), s(inp, size_t(N) * C), s(w, size_t(OC) * C), s(bias, OC), N, C, OC,
      s(static_cast<unsigned char*>(scratch), k::matmul_bf16_scratch_bytes(N, C, OC)));
  s.finish();
}
inline void matmul_bf16_backward(float* dinp, float* dw, float* dbias, const float* dout,
                                 const float* inp, const uint16_t* w, int N, int C, int OC,
                                 void* scratch) {
  Stager s("matmul_bf16_backward");
  k::matmul_bf16_backward(
      s(dinp, size_t(N) * C), s(dw, size_t(OC) * C), s(dbias, OC), s(dout, size_t(N) * OC),
      s(inp, size_t(N) * C), s(w, size_t(OC) * C), N, C, OC,
      s(static_cast<unsigned char*>(scratch), k::matmul_bf16_scratch_bytes(N, C, OC)));
  s.finish();
}
inline void add(float* out, const float* a, const float* b, size_t n) {
  Stager s("add");
  k::add(s(out, n), s(a, n), s(b, n), n);
  s.finish();
}
inline void accumulate(float* dst, const float* src, size_t n) {
  Stager s("accumulate");
  k::accumulate(s(dst, n), s(src, n), n);
  s.finish();
}
inline void scale(float* x, float v, size_t n) {
  Stager s("scale");
  k::scale(s(x, n), v, n);
  s.finish();
}
inline void axpy(float* y, float a, const float* x, size_t n) {
  Stager s("axpy");
  k::axpy(s(y, n), a, s(x, n), n);
  s.finish();
}
inline void axpby(float* y, float a, const float* x, float b, size_t n) {
  Stager s("axpby");
  k::axpby(s(y, n), a, s(x, n), b, n);
  s.finish();
}
inline double accumulate_sum_squares(float* y, const float* x, size_t n) {
  Stager s("accumulate_sum_squares");
  const double r = k::accumulate_sum_squares(s(y, n), s(x, n), n);
  s.finish();
  return r;
}
inline void sum_squares_to(double* out, const float* x, size_t n) {
  Stager s("sum_squares_to");
  k::sum_squares_to(s(out, 1), s(x, n), n);
  s.finish();
}
inline double sum(const float* x, size_t n) {
  Stager s("sum");
  const double r = k::sum(s(x, n), n);
  s.finish();
  return r;
}
inline void accumulate_blocks(float* compact, const float* x, const int32_t* blocks,
                              size_t n_blocks, size_t B, size_t n_x) {
  Stager s("accumulate_blocks");
  k::accumulate_blocks(s(compact, n_blocks * B), s(x, n_x), s(blocks, n_blocks), n_blocks, B, n_x);
  s.finish();
}
inline void assign_at(int32_t* x, const int32_t* idx, size_t k, int32_t value) {
  size_t n = 0;  // x's extent: past the largest index
  for (size_t j = 0; j < k; ++j) n = std::max(n, size_t(idx[j]) + 1);
  Stager s("assign_at");
  k::assign_at(s(x, n), s(idx, k), k, value);
  s.finish();
}
// The extents the runs reach in dst and in src.
inline std::pair<size_t, size_t> run_extents(const CopyRun* runs, size_t n_runs) {
  size_t d = 0, s = 0;
  for (size_t j = 0; j < n_runs; ++j) {
    d = std::max<size_t>(d, runs[j].dst_offset + runs[j].n);
    s = std::max<size_t>(s, runs[j].src_offset + runs[j].n);
  }
  return {d, s};
}
inline void copy_runs(float* dst, const float* src, const CopyRun* runs, size_t n_runs) {
  Stager s("copy_runs");
  const auto [nd, ns] = run_extents(runs, n_runs);
  k::copy_runs(s(dst, nd), s(src, ns), s(runs, n_runs), n_runs);
  s.finish();
}
inline void accumulate_runs(float* dst, const float* src, const CopyRun* runs, size_t n_runs) {
  Stager s("accumulate_runs");
  const auto [nd, ns] = run_extents(runs, n_runs);
  k::accumulate_runs(s(dst, nd), s(src, ns), s(runs, n_runs), n_runs);
  s.finish();
}
inline void zero_blocks(float* x, const int32_t* blocks, size_t n_blocks, size_t B, size_t n_x) {
  Stager s("zero_blocks");
  k::zero_blocks(s(x, n_x), s(blocks, n_blocks), n_blocks, B, n_x);
  s.finish();
}
inline void block_l1_norms(double* out, const float* x, const int32_t* blocks, size_t n_blocks,
                           size_t B, size_t n_x) {
  Stager s("block_l1_norms");
  k::block_l1_norms(s(out, n_blocks), s(x, n_x), s(blocks, n_blocks), n_blocks, B, n_x);
  s.finish();
}
inline void increment_clamped(int32_t* x, size_t n, int32_t cap) {
  Stager s("increment_clamped");
  k::increment_clamped(s(x, n), n, cap);
  s.finish();
}
inline void gather(float* out, const float* x, const uint32_t* idx, size_t k) {
  Stager s("gather");
  k::gather(s(out, k), s(x, extent(idx, k)), s(idx, k), k);
  s.finish();
}
inline void scatter(float* x, const float* in, const uint32_t* idx, size_t k) {
  Stager s("scatter");
  k::scatter(s(x, extent(idx, k)), s(in, k), s(idx, k), k);
  s.finish();
}
inline void scale_at(float* x, const uint32_t* idx, size_t k, float v) {
  Stager s("scale_at");
  k::scale_at(s(x, extent(idx, k)), s(idx, k), k, v);
  s.finish();
}
inline void mask_score(float* out, float a, const float* x, float b, const float* y, size_t n) {
  Stager s("mask_score");
  k::mask_score(s(out, n), a, s(x, n), b, s(y, n), n);
  s.finish();
}
inline void age_bonus(float* scores, const float* last, float kb, float now, size_t n) {
  Stager s("age_bonus");
  k::age_bonus(s(scores, n), s(last, n), kb, now, n);
  s.finish();
}
inline void top_k_indices(const float* scores, size_t n, size_t kk, uint32_t* out) {
  Stager s("top_k_indices");
  k::top_k_indices(s(scores, n), n, kk, s(out, kk));
  s.finish();
}
inline void nesterov_outer(float* anchor, float* m, const float* delta, float lr, float mu,
                           size_t n) {
  Stager s("nesterov_outer");
  k::nesterov_outer(s(anchor, n), s(m, n), s(delta, n), lr, mu, n);
  s.finish();
}
inline double sum_squares(const float* x, size_t n) {
  Stager s("sum_squares");
  const double r = k::sum_squares(s(x, n), n);
  s.finish();
  return r;
}

inline void to_bf16(uint16_t* out, const float* in, size_t n) {
  Stager s("to_bf16");
  k::to_bf16(s(out, n), s(in, n), n);
  s.finish();
}
inline void from_bf16(float* out, const uint16_t* in, size_t n) {
  Stager s("from_bf16");
  k::from_bf16(s(out, n), s(in, n), n);
  s.finish();
}

}  // namespace staged

// The staged table: every op of kernels/ops.h.
inline kernels::OpTable cuda_staged_ops() {
  kernels::OpTable t{};
  t.backend = "cuda";
  t.memory = &kernels::cpu::kMemory;  // the entries take host buffers and stage them
  t.encoder_forward = staged::encoder_forward;
  t.encoder_backward = staged::encoder_backward;
  t.layernorm_forward = staged::layernorm_forward;
  t.layernorm_backward = staged::layernorm_backward;
  t.gelu_forward = staged::gelu_forward;
  t.gelu_backward = staged::gelu_backward;
  t.rmsnorm_forward = staged::rmsnorm_forward;
  t.rmsnorm_backward = staged::rmsnorm_backward;
  t.rope_forward = staged::rope_forward;
  t.rope_backward = staged::rope_backward;
  t.swiglu_forward = staged::swiglu_forward;
  t.swiglu_backward = staged::swiglu_backward;
  t.matmul_forward = staged::matmul_forward;
  t.matmul_backward = staged::matmul_backward;
  t.matmul_bf16_forward = staged::matmul_bf16_forward;
  t.matmul_bf16_backward = staged::matmul_bf16_backward;
  t.matmul_bf16_scratch_bytes = kernels::cuda::matmul_bf16_scratch_bytes;
  t.attention_forward = staged::attention_forward;
  t.attention_backward = staged::attention_backward;
  t.attention_saved_size = kernels::cuda::attention_saved_size;
  t.attention_scratch_size = kernels::cuda::attention_scratch_size;
  t.crossentropy_forward = staged::crossentropy_forward;
  t.crossentropy_backward = staged::crossentropy_backward;
  t.crossentropy_forward_backward = staged::crossentropy_forward_backward;
  t.adamw_update = staged::adamw_update;
  t.adams_update = staged::adams_update;
  t.adamw_update_blocks = staged::adamw_update_blocks;
  t.adams_update_indexed = staged::adams_update_indexed;
  t.adams_update_from_momentum = staged::adams_update_from_momentum;
  t.add = staged::add;
  t.accumulate = staged::accumulate;
  t.scale = staged::scale;
  t.axpy = staged::axpy;
  t.nesterov_outer = staged::nesterov_outer;
  t.axpby = staged::axpby;
  t.accumulate_sum_squares = staged::accumulate_sum_squares;
  t.gather = staged::gather;
  t.scatter = staged::scatter;
  t.scale_at = staged::scale_at;
  t.mask_score = staged::mask_score;
  t.age_bonus = staged::age_bonus;
  t.top_k_indices = staged::top_k_indices;
  t.sum = staged::sum;
  t.sum_squares_to = staged::sum_squares_to;
  t.accumulate_blocks = staged::accumulate_blocks;
  t.zero_blocks = staged::zero_blocks;
  t.block_l1_norms = staged::block_l1_norms;
  t.increment_clamped = staged::increment_clamped;
  t.assign_at = staged::assign_at;
  t.copy_runs = staged::copy_runs;
  t.accumulate_runs = staged::accumulate_runs;
  t.sum_squares = staged::sum_squares;
  t.to_bf16 = staged::to_bf16;
  t.from_bf16 = staged::from_bf16;
  return t;
}

using kernels::cuda::visible_gpus;

}  // namespace gossamer::cuda_test
