// Model: the single-device interface the training loop, evaluation, sampling and checkpoints
// use, whatever the architecture. A model owns flat parameter and gradient buffers described
// by its ParamLayout, runs forward/backward over the op table, and reports final gradient
// ranges through the hook during backward. It knows nothing about ranks, files or optimizers.
// Its buffers live in the op table's memory (OpTable::memory): params(), grads() and logits()
// are host memory only when memory().host_accessible (the CPU backend); otherwise they are
// device pointers, read and written through Buffer / MemoryOps copies.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "core/memory_ops.h"
#include "kernels/matmul_dtype.h"
#include "kernels/ops.h"
#include "model/model_config.h"
#include "model/param_layout.h"

namespace gossamer::model {

// Called with [begin, end) element offsets of the gradient buffer once they are final.
using GradReadyHook = std::function<void(size_t begin, size_t end)>;

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelConfig& config() const = 0;
  virtual const ParamLayout& layout() const = 0;
  virtual std::span<float> params() = 0;
  virtual std::span<const float> params() const = 0;
  virtual std::span<float> grads() = 0;
  virtual std::span<const float> grads() const = 0;
  virtual int max_batch() const = 0;
  virtual int max_seq() const = 0;

  // Deterministic initialisation from a seed.
  virtual void init_weights(uint64_t seed) = 0;
  // Forward on tokens (B,T). With targets (B,T): returns the mean cross-entropy and prepares
  // backward(). Without: leaves logits (B,T,Vp) readable through logits() and returns 0.
  virtual float forward(const int32_t* tokens, const int32_t* targets, int B, int T) = 0;
  // The mean cross-entropy of tokens (B,T) against targets (B,T), preparing nothing for
  // backward(): evaluation's forward, which does no gradient work.
  virtual float eval_loss(const int32_t* tokens, const int32_t* targets, int B, int T) = 0;
  virtual const float* logits() const = 0;
  // Copies logits() elements [offset, offset + out.size()) to host memory: the explicit read
  // every backend supports (a plain copy on the CPU). Only after a forward without targets,
  // whose (B, T, Vp) rows it indexes; throws outside them (a forward with targets keeps no
  // logits: its LM head runs in row chunks with the loss).
  void copy_logits_to(size_t offset, std::span<float> out) const;
  // Elements of logits() the last forward left as logits: B * T * Vp after a forward without
  // targets, else 0.
  virtual size_t readable_logits() const = 0;
  // Where params(), grads() and logits() live: the memory of the op table it was built with.
  virtual const MemoryOps& memory() const = 0;
  virtual void zero_grad() = 0;
  // grads += d(grad_scale * loss)/d(params); hook sees each final range in buffer order.
  virtual void backward(float grad_scale, const GradReadyHook& hook) = 0;
  void backward(float grad_scale) { backward(grad_scale, {}); }

  // Rows per chunk of the LM head, which a forward with targets runs with the loss: of the
  // logits, it keeps one chunk (rows, Vp) at a time, never all (B, T, Vp).
  virtual int head_chunk_rows() const = 0;
  // Seconds the last forward with targets spent on backward work: the LM head's gradient
  // products, made chunk by chunk inside the forward (the trainer counts them as backward).
  virtual double forward_backward_seconds() const = 0;

  // Parameters counted by the FLOP estimate (all but position embeddings and padding rows).
  virtual size_t num_flop_params() const = 0;
  // FLOPs of the matrix products and attention the passes ran since construction (2 per
  // multiply-add; a training step's share is flops_per_token() per token, an evaluation's a
  // third of it). The compute of simulated time at parallel.sim.gflops.
  virtual double flops_done() const = 0;

  // Gradient routing, for methods that keep some gradients only in their own compact form
  // (dynamic sparse training, docs/SMET.md): from now on the gradients of the block matrices
  // (PARAM_KIND_WEIGHT views inside blocks.*) are not accumulated in grads(). backward()
  // computes each matrix's gradient (or the few matrices one fused product writes) into a
  // scratch buffer the size of the largest such product, hands every view in it to
  // `on_ready(view index, gradient)` (in the model's memory: device memory on a GPU; valid
  // during the call only) and reuses the scratch for the next; the block's range still goes to
  // the backward hook afterwards. Their ranges of grads() are never written, and on host memory
  // given back to the system (they read as zero). Call once, before the first backward.
  using RoutedGradientHook = std::function<void(size_t view, const float* grad)>;
  virtual void route_block_weight_gradients(RoutedGradientHook on_ready) = 0;
};

// Training FLOPs per token, the standard estimate 6N + 6LCT (N = num_flop_params()).
double flops_per_token(const Model& model, int seq_len);

// Builds the model of config.family; throws naming model.family when unknown. matmul_dtype: the
// operands of its matrix products (kernels.matmul_dtype; bf16: DecoderModel's linear_forward).
std::unique_ptr<Model> make_model(
    const ModelConfig& config, int max_batch, int max_seq, const kernels::OpTable& ops,
    kernels::MatmulDtype matmul_dtype = kernels::MatmulDtype::MATMUL_DTYPE_FP32);

}  // namespace gossamer::model
