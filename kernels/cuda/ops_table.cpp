// Implementation of ops_table.h: designated initialisers, so that two entries of the same
// signature cannot be swapped silently.
#include "kernels/cuda/ops_table.h"

#include "kernels/cuda/adam.cuh"
#include "kernels/cuda/adam_sparse.cuh"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/block_ops.cuh"
#include "kernels/cuda/copy_runs.cuh"
#include "kernels/cuda/crossentropy.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/encoder.cuh"
#include "kernels/cuda/gelu.cuh"
#include "kernels/cuda/layernorm.cuh"
#include "kernels/cuda/mask_score.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/memory.cuh"
#include "kernels/cuda/outer_update.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/sparse_select.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr OpTable kCudaOps{
    .backend = "cuda",
    .memory = &kMemory,
    .encoder_forward = encoder_forward,
    .encoder_backward = encoder_backward,
    .layernorm_forward = layernorm_forward,
    .layernorm_backward = layernorm_backward,
    .matmul_forward = matmul_forward,
    .matmul_backward = matmul_backward,
    .matmul_bf16_forward = matmul_bf16_forward,
    .matmul_bf16_backward = matmul_bf16_backward,
    .matmul_bf16_scratch_bytes = matmul_bf16_scratch_bytes,
    .attention_forward = attention_forward,
    .attention_backward = attention_backward,
    .attention_saved_size = attention_saved_size,
    .attention_scratch_size = attention_scratch_size,
    .rmsnorm_forward = rmsnorm_forward,
    .rmsnorm_backward = rmsnorm_backward,
    .rope_forward = rope_forward,
    .rope_backward = rope_backward,
    .swiglu_forward = swiglu_forward,
    .swiglu_backward = swiglu_backward,
    .gelu_forward = gelu_forward,
    .gelu_backward = gelu_backward,
    .add = add,
    .accumulate = accumulate,
    .scale = scale,
    .axpy = axpy,
    .axpby = axpby,
    .sum_squares = sum_squares,
    .sum_squares_to = sum_squares_to,
    .accumulate_sum_squares = accumulate_sum_squares,
    .sum = sum,
    .to_bf16 = to_bf16,
    .from_bf16 = from_bf16,
    .crossentropy_forward = crossentropy_forward,
    .crossentropy_backward = crossentropy_backward,
    .crossentropy_forward_backward = crossentropy_forward_backward,
    .adamw_update = adamw_update,
    .adamw_update_blocks = adamw_update_blocks,
    .adams_update = adams_update,
    .adams_update_indexed = adams_update_indexed,
    .adams_update_from_momentum = adams_update_from_momentum,
    .nesterov_outer = nesterov_outer,
    .gather = gather,
    .scatter = scatter,
    .scale_at = scale_at,
    .mask_score = mask_score,
    .age_bonus = age_bonus,
    .top_k_indices = top_k_indices,
    .accumulate_blocks = accumulate_blocks,
    .zero_blocks = zero_blocks,
    .block_l1_norms = block_l1_norms,
    .increment_clamped = increment_clamped,
    .assign_at = assign_at,
    .copy_runs = copy_runs,
    .accumulate_runs = accumulate_runs,
};

static_assert(first_unset_op(kCudaOps) == nullptr, "the CUDA op table has an unset entry");

}  // namespace

const OpTable& ops() {
  return kCudaOps;
}

}  // namespace gossamer::kernels::cuda
