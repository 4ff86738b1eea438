// The CPU op tables: the float table model code runs on, and the double table the op tests use
// as their reference, both filled from the templates of kernels/cpu/*.h.
// Invariant: every entry is set (checked at compile time below) and named by a designated
// initialiser, so that two entries of the same signature cannot be swapped silently.
#include "kernels/cpu/adams.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/block_ops.h"
#include "kernels/cpu/copy_runs.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/encoder.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/mask_score.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/memory.h"
#include "kernels/cpu/outer_update.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/sparse_select.h"
#include "kernels/cpu/swiglu.h"
#include "kernels/ops.h"

namespace gossamer::kernels {

namespace {

template <class Real>
constexpr BasicOpTable<Real> make_cpu_table() {
  return {
      .backend = "cpu",
      .memory = &cpu::kMemory,
      .encoder_forward = cpu::encoder_forward<Real>,
      .encoder_backward = cpu::encoder_backward<Real>,
      .layernorm_forward = cpu::layernorm_forward<Real>,
      .layernorm_backward = cpu::layernorm_backward<Real>,
      .matmul_forward = cpu::matmul_forward<Real>,
      .matmul_backward = cpu::matmul_backward<Real>,
      .matmul_bf16_forward = cpu::matmul_bf16_forward<Real>,
      .matmul_bf16_backward = cpu::matmul_bf16_backward<Real>,
      .matmul_bf16_scratch_bytes = cpu::matmul_bf16_scratch_bytes<Real>,
      .attention_forward = cpu::attention_forward<Real>,
      .attention_backward = cpu::attention_backward<Real>,
      .attention_saved_size = cpu::attention_saved_size,
      .attention_scratch_size = cpu::attention_scratch_size,
      .rmsnorm_forward = cpu::rmsnorm_forward<Real>,
      .rmsnorm_backward = cpu::rmsnorm_backward<Real>,
      .rope_forward = cpu::rope_forward<Real>,
      .rope_backward = cpu::rope_backward<Real>,
      .swiglu_forward = cpu::swiglu_forward<Real>,
      .swiglu_backward = cpu::swiglu_backward<Real>,
      .gelu_forward = cpu::gelu_forward<Real>,
      .gelu_backward = cpu::gelu_backward<Real>,
      .add = cpu::add<Real>,
      .accumulate = cpu::accumulate<Real>,
      .scale = cpu::scale<Real>,
      .axpy = cpu::axpy<Real>,
      .axpby = cpu::axpby<Real>,
      .sum_squares = cpu::sum_squares<Real>,
      .sum_squares_to = cpu::sum_squares_to<Real>,
      .accumulate_sum_squares = cpu::accumulate_sum_squares<Real>,
      .sum = cpu::sum<Real>,
      .to_bf16 = cpu::to_bf16<Real>,
      .from_bf16 = cpu::from_bf16<Real>,
      .crossentropy_forward = cpu::crossentropy_forward<Real>,
      .crossentropy_backward = cpu::crossentropy_backward<Real>,
      .crossentropy_forward_backward = cpu::crossentropy_forward_backward<Real>,
      .adamw_update = cpu::adamw_update<Real>,
      .adamw_update_blocks = cpu::adamw_update_blocks<Real>,
      .adams_update = cpu::adams_update<Real>,
      .adams_update_indexed = cpu::adams_update_indexed<Real>,
      .adams_update_from_momentum = cpu::adams_update_from_momentum<Real>,
      .nesterov_outer = cpu::nesterov_outer<Real>,
      .gather = cpu::gather<Real>,
      .scatter = cpu::scatter<Real>,
      .scale_at = cpu::scale_at<Real>,
      .mask_score = cpu::mask_score<Real>,
      .age_bonus = cpu::age_bonus<Real>,
      .top_k_indices = cpu::top_k_indices<Real>,
      .accumulate_blocks = cpu::accumulate_blocks<Real>,
      .zero_blocks = cpu::zero_blocks<Real>,
      .block_l1_norms = cpu::block_l1_norms<Real>,
      .increment_clamped = cpu::increment_clamped,
      .assign_at = cpu::assign_at,
      .copy_runs = cpu::copy_runs<Real>,
      .accumulate_runs = cpu::accumulate_runs<Real>,
  };
}

constexpr OpTable kCpuOps = make_cpu_table<float>();
constexpr BasicOpTable<double> kCpuOpsF64 = make_cpu_table<double>();

// GCC's -fsanitize=undefined makes comparing a function's address with null non-constant, so the
// sanitizer build leaves this check to -Wmissing-field-initializers and the unit test
// OpTable.CpuTablesSetEveryEntry.
#ifndef GOSSAMER_SANITIZE_BUILD
static_assert(first_unset_op(kCpuOps) == nullptr, "the float CPU op table has an unset entry");
static_assert(first_unset_op(kCpuOpsF64) == nullptr, "the double CPU op table has an unset entry");
#endif

}  // namespace

const OpTable& cpu_ops() {
  return kCpuOps;
}

const BasicOpTable<double>& cpu_ops_f64() {
  return kCpuOpsF64;
}

}  // namespace gossamer::kernels
