// The op table: the one dispatch point between model code and a backend.
// BasicOpTable<Real> holds one function pointer per op, over the element type Real, with the
// argument conventions and "=" / "+=" rules of the ops declared in kernels/cpu/*.h (shapes and
// formulas are documented there). Each backend (CPU now, CUDA later) fills an OpTable
// (= BasicOpTable<float>) with its fp32 implementations; model and optimizer code call ops only
// through an OpTable and never branch on the device; the table also points to its backend's
// memory functions (core/memory_ops.h), through which buffers for its ops are allocated and
// filled. The CPU backend also fills a
// BasicOpTable<double>: the reference the op tests (tests/unit/op_test_harness.h) check every
// backend against, never used by model code.
// Invariants: a backend's table sets every entry (for_each_op() visits them all, pinned to the
// struct by a static_assert on its size; the CPU tables are checked non-null at compile time);
// tables are filled with designated initialisers, so that two entries of the same signature
// cannot be swapped silently.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/memory_ops.h"
#include "kernels/adam_step.h"
#include "kernels/copy_run.h"

namespace gossamer::kernels {

template <class Real>
struct BasicOpTable {
  const char* backend;  // "cpu" or "cuda"
  // Where the buffers these ops take live, and how to allocate, zero and copy them.
  const MemoryOps* memory;
  void (*encoder_forward)(Real* out, const int32_t* tokens, const Real* wte, const Real* wpe, int B,
                          int T, int C);
  void (*encoder_backward)(Real* dwte, Real* dwpe, const Real* dout, const int32_t* tokens, int B,
                           int T, int C);
  void (*layernorm_forward)(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* w,
                            const Real* b, int N, int C);
  void (*layernorm_backward)(Real* dinp, Real* dw, Real* db, const Real* dout, const Real* inp,
                             const Real* w, const Real* mean, const Real* rstd, int N, int C);
  void (*matmul_forward)(Real* out, const Real* inp, const Real* w, const Real* bias, int N, int C,
                         int OC);
  void (*matmul_backward)(Real* dinp, Real* dw, Real* dbias, const Real* dout, const Real* inp,
                          const Real* w, int N, int C, int OC);
  // The same products with bf16 operands and fp32 accumulation (kernels/cpu/matmul.h): w is
  // already bf16 (the model's mirror of its weights); inp, and dout for dinp and dw, are rounded
  // to bf16 at the call; each product of two bf16 values is exact and the sums are in Real; bias
  // and dbias stay in Real (dbias from the unrounded dout). scratch: matmul_bf16_scratch_bytes
  // bytes of the table's memory, for the rounded copies (the layout is the backend's).
  void (*matmul_bf16_forward)(Real* out, const Real* inp, const uint16_t* w, const Real* bias,
                              int N, int C, int OC, void* scratch);
  void (*matmul_bf16_backward)(Real* dinp, Real* dw, Real* dbias, const Real* dout, const Real* inp,
                               const uint16_t* w, int N, int C, int OC, void* scratch);
  size_t (*matmul_bf16_scratch_bytes)(int N, int C, int OC);
  // Attention's forward saves what its backward needs in a layout the backend chooses (CPU: the
  // (B,NH,T,T) attention matrix; CUDA: the softmax's row statistics, (B,NH,T,2), memory linear
  // in T); each backend states the sizes, in elements of Real, of that saved state and of the
  // backward's workspace.
  void (*attention_forward)(Real* out, Real* saved, const Real* qkv, int B, int T, int C, int NH,
                            int NKV);
  void (*attention_backward)(Real* dqkv, Real* scratch, const Real* dout, const Real* qkv,
                             const Real* out, const Real* saved, int B, int T, int C, int NH,
                             int NKV);
  size_t (*attention_saved_size)(int B, int T, int NH);
  size_t (*attention_scratch_size)(int B, int T, int NH);
  void (*rmsnorm_forward)(Real* out, Real* rstd, const Real* inp, const Real* w, int N, int C,
                          double eps);
  void (*rmsnorm_backward)(Real* dinp, Real* dw, const Real* dout, const Real* inp, const Real* w,
                           const Real* rstd, int N, int C);
  void (*rope_forward)(Real* x, int B, int T, int n_heads, int head_dim, int row_stride,
                       double theta);
  void (*rope_backward)(Real* dx, int B, int T, int n_heads, int head_dim, int row_stride,
                        double theta);
  void (*swiglu_forward)(Real* out, const Real* inp, int N, int F);
  void (*swiglu_backward)(Real* dinp, const Real* dout, const Real* inp, int N, int F);
  void (*gelu_forward)(Real* out, const Real* inp, size_t n);
  void (*gelu_backward)(Real* dinp, const Real* inp, const Real* dout, size_t n);
  void (*add)(Real* out, const Real* a, const Real* b, size_t n);
  void (*accumulate)(Real* dst, const Real* src, size_t n);
  void (*scale)(Real* x, Real s, size_t n);
  void (*axpy)(Real* y, Real a, const Real* x, size_t n);           // y += a x
  void (*axpby)(Real* y, Real a, const Real* x, Real b, size_t n);  // y = b y + a x
  double (*sum_squares)(const Real* x, size_t n);
  // *out = sum_squares(x, n), the same bits, left in the table's memory: no host round trip
  // (DataParallel's per-bucket check, read once per step).
  void (*sum_squares_to)(double* out, const Real* x, size_t n);
  // y += x; returns the sum of the squares of the new y (one pass).
  double (*accumulate_sum_squares)(Real* y, const Real* x, size_t n);
  double (*sum)(const Real* x, size_t n);
  // bfloat16 (the upper 16 bits of an fp32) <-> Real: to_bf16 rounds to nearest, ties to
  // even, and keeps NaNs NaN (the rule of core/bf16.h); from_bf16 is exact.
  void (*to_bf16)(uint16_t* out, const Real* in, size_t n);
  void (*from_bf16)(Real* out, const uint16_t* in, size_t n);
  void (*crossentropy_forward)(Real* losses, Real* probs, const Real* logits,
                               const int32_t* targets, int N, int V, int Vp);
  void (*crossentropy_backward)(Real* dlogits, const Real* probs, const int32_t* targets,
                                Real scale, int N, int V, int Vp);
  // Both in one (training, where the loss's gradient is known): losses as the forward,
  // dlogits as the backward of its probabilities, the same bits; dlogits may alias logits.
  void (*crossentropy_forward_backward)(Real* losses, Real* dlogits, const Real* logits,
                                        const int32_t* targets, Real scale, int N, int V, int Vp);
  // The optimizer updates: the hyper-parameters in one AdamStep (kernels/adam_step.h says which
  // op reads which field).
  void (*adamw_update)(Real* param, const Real* grad, Real* m, Real* v, size_t n,
                       const AdamStep& step);
  void (*adamw_update_blocks)(Real* param, const Real* grad, Real* m, Real* v,
                              const int32_t* blocks, const int32_t* steps, size_t n_blocks,
                              size_t block_size, size_t n_param, Real* update_sq,
                              const AdamStep& step);
  void (*adams_update)(Real* param, const Real* grad, Real* m, size_t n, const AdamStep& step);
  void (*adams_update_indexed)(Real* param, const uint32_t* pidx, const uint32_t* idx,
                               const Real* g, size_t k, const IndexedAdamsState<Real>& state,
                               const AdamStep& step);
  void (*adams_update_from_momentum)(Real* param, const uint32_t* pidx, Real* m_last, float* last,
                                     const uint32_t* idx, const Real* m_now, const uint8_t* decay,
                                     size_t k, const AdamStep& step);
  // The outer Nesterov step of DiLoCo (kernels/cpu/outer_update.h):
  // m <- mu m + delta; anchor <- anchor - lr (delta + mu m).
  void (*nesterov_outer)(Real* anchor, Real* m, const Real* delta, Real lr, Real mu, size_t n);
  // SCAPE's selection (kernels/cpu/sparse_select.h, kernels/cpu/mask_score.h): values at a list
  // of distinct 32-bit indices, the mask score and the exact top-k with the lower index winning
  // ties (the result sorted ascending, in device memory like the scores).
  void (*gather)(Real* out, const Real* x, const uint32_t* idx, size_t k);  // out[j] = x[idx[j]]
  void (*scatter)(Real* x, const Real* in, const uint32_t* idx, size_t k);  // x[idx[j]] = in[j]
  void (*scale_at)(Real* x, const uint32_t* idx, size_t k, Real s);  // x[idx[j]] *= s; 0 writes 0
  void (*mask_score)(Real* out, Real a, const Real* x, Real b, const Real* y, size_t n);
  void (*age_bonus)(Real* scores, const float* last, Real k, Real now, size_t n);
  void (*top_k_indices)(const Real* scores, size_t n, size_t k, uint32_t* out);
  // Dynamic sparse training's block moves (kernels/cpu/block_ops.h): blocks of B elements of a
  // matrix of n_x, listed by block index, and compact buffers of B elements per listed block.
  void (*accumulate_blocks)(Real* compact, const Real* x, const int32_t* blocks, size_t n_blocks,
                            size_t B, size_t n_x);
  void (*zero_blocks)(Real* x, const int32_t* blocks, size_t n_blocks, size_t B, size_t n_x);
  void (*block_l1_norms)(double* out, const Real* x, const int32_t* blocks, size_t n_blocks,
                         size_t B, size_t n_x);
  void (*increment_clamped)(int32_t* x, size_t n, int32_t cap);  // x = min(x + 1, cap)
  void (*assign_at)(int32_t* x, const int32_t* idx, size_t k, int32_t value);  // x[idx[j]] = value
  // Piece-wise moves (kernels/cpu/copy_runs.h): per run, n elements of src at src_offset to
  // dst at dst_offset (=, or +=); the runs in the table's memory, their destinations disjoint.
  void (*copy_runs)(Real* dst, const Real* src, const CopyRun* runs, size_t n_runs);
  void (*accumulate_runs)(Real* dst, const Real* src, const CopyRun* runs, size_t n_runs);

  // Calls f(name, entry) for the backend name and every op entry, in declaration order. Lets
  // tests and backends check a table for unset entries and name them.
  template <class F>
  constexpr void for_each_op(F&& f) const {
    f("backend", backend);
    f("memory", memory);
    f("encoder_forward", encoder_forward);
    f("encoder_backward", encoder_backward);
    f("layernorm_forward", layernorm_forward);
    f("layernorm_backward", layernorm_backward);
    f("matmul_forward", matmul_forward);
    f("matmul_backward", matmul_backward);
    f("matmul_bf16_forward", matmul_bf16_forward);
    f("matmul_bf16_backward", matmul_bf16_backward);
    f("matmul_bf16_scratch_bytes", matmul_bf16_scratch_bytes);
    f("attention_forward", attention_forward);
    f("attention_backward", attention_backward);
    f("attention_saved_size", attention_saved_size);
    f("attention_scratch_size", attention_scratch_size);
    f("rmsnorm_forward", rmsnorm_forward);
    f("rmsnorm_backward", rmsnorm_backward);
    f("rope_forward", rope_forward);
    f("rope_backward", rope_backward);
    f("swiglu_forward", swiglu_forward);
    f("swiglu_backward", swiglu_backward);
    f("gelu_forward", gelu_forward);
    f("gelu_backward", gelu_backward);
    f("add", add);
    f("accumulate", accumulate);
    f("scale", scale);
    f("axpy", axpy);
    f("axpby", axpby);
    f("sum_squares", sum_squares);
    f("sum_squares_to", sum_squares_to);
    f("accumulate_sum_squares", accumulate_sum_squares);
    f("sum", sum);
    f("to_bf16", to_bf16);
    f("from_bf16", from_bf16);
    f("crossentropy_forward", crossentropy_forward);
    f("crossentropy_backward", crossentropy_backward);
    f("crossentropy_forward_backward", crossentropy_forward_backward);
    f("adamw_update", adamw_update);
    f("adamw_update_blocks", adamw_update_blocks);
    f("adams_update", adams_update);
    f("adams_update_indexed", adams_update_indexed);
    f("adams_update_from_momentum", adams_update_from_momentum);
    f("nesterov_outer", nesterov_outer);
    f("gather", gather);
    f("scatter", scatter);
    f("scale_at", scale_at);
    f("mask_score", mask_score);
    f("age_bonus", age_bonus);
    f("top_k_indices", top_k_indices);
    f("accumulate_blocks", accumulate_blocks);
    f("zero_blocks", zero_blocks);
    f("block_l1_norms", block_l1_norms);
    f("increment_clamped", increment_clamped);
    f("assign_at", assign_at);
    f("copy_runs", copy_runs);
    f("accumulate_runs", accumulate_runs);
  }
};

using OpTable = BasicOpTable<float>;

// The name of the first unset entry of a table (in for_each_op order), nullptr when all are
// set. constexpr: usable in a static_assert on a constexpr table.
template <class Real>
constexpr const char* first_unset_op(const BasicOpTable<Real>& table) {
  const char* unset = nullptr;
  table.for_each_op([&](const char* name, auto entry) {
    if (unset == nullptr && entry == nullptr) unset = name;
  });
  return unset;
}

namespace detail {
// The number of entries for_each_op() visits.
template <class Real>
constexpr size_t op_table_entries() {
  size_t n = 0;
  BasicOpTable<Real>{}.for_each_op([&](const char*, auto) { ++n; });
  return n;
}
}  // namespace detail

// Every member is one pointer: an entry added to the struct but not to for_each_op() fails here.
static_assert(sizeof(OpTable) == detail::op_table_entries<float>() * sizeof(void*),
              "BasicOpTable::for_each_op() must visit every entry");
static_assert(sizeof(BasicOpTable<double>) == detail::op_table_entries<double>() * sizeof(void*),
              "BasicOpTable::for_each_op() must visit every entry");

// The CPU backend (always built): the float table model code runs on.
const OpTable& cpu_ops();
// The same CPU ops instantiated for double: the reference of the op tests (finite differences,
// float-vs-double comparison). Not for model code.
const BasicOpTable<double>& cpu_ops_f64();

}  // namespace gossamer::kernels
