// DecoderModel: the scaffolding every decoder-only family shares, so that a family's class
// holds only its layout and its hand-written forward and backward. It owns the config and
// layout, the flat parameter and gradient buffers, the batch of the last forward (tokens,
// targets, B, T) and the logits/probabilities and per-position losses, and implements the
// shape and token-range checks, zero_grad, the initialisation and the FLOP count (from the
// family's row of the family table), the loss tail of the forward, the cross-entropy head of
// the backward, and the backward-order layout of the blocks with their gradient-ready ranges.
// Every buffer is a Buffer<T> in the op table's memory; the host-side work (token checks, the
// initial weights, the loss sum) runs on the host and moves data through it explicitly (uploads
// of tokens and initial weights, a read-back of the per-position losses).
// Invariant: the family's constructor builds layout_ (head, then layout_blocks(), then the
// embeddings) and then calls allocate_parameters() before anything reads params()/grads();
// forward() and backward() are final: they wrap the family's forward_logits() and
// backward_from_logits() in the checks, the loss and the cross-entropy head. Families take
// every matrix gradient from weight_grad() and call routed_done() after its product, so that
// routed gradients (route_block_weight_gradients()) go through the scratch. Families run every
// product with a weight matrix through linear_forward() / linear_backward(), so that the
// model's matmul dtype applies to all of them; with bf16 the mirror of the weights is
// refreshed from params() at every forward (the optimizer updates params() in between).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "model/family.h"
#include "model/model.h"

namespace gossamer::model {

class DecoderModel : public Model {
 public:
  const ModelConfig& config() const final { return cfg_; }
  const ParamLayout& layout() const final { return layout_; }
  std::span<float> params() final { return params_.span(); }
  std::span<const float> params() const final { return params_.span(); }
  std::span<float> grads() final { return grads_.span(); }
  std::span<const float> grads() const final { return grads_.span(); }
  int max_batch() const final { return max_B_; }
  int max_seq() const final { return max_T_; }
  const float* logits() const final { return logits_.data(); }
  size_t readable_logits() const final {
    return logits_readable_ ? size_t(B_) * size_t(T_) * size_t(Vp_) : 0;
  }
  const MemoryOps& memory() const final { return *ops_.memory; }
  void zero_grad() final;

  // Initialisation from `seed` on the family's Rng stream (family table), drawn in layout
  // order: norm gains 1 and norm shifts 0, biases 0, every other tensor ~ N(0, init_std) except
  // the family's residual projections ~ N(0, init_std / sqrt(2 n_layer)); the padded
  // vocabulary rows of wte and lm_head.weight 0.
  void init_weights(uint64_t seed) final;

  // Parameters counted for the FLOP estimate 6N + 6LCT per token: all parameters except the
  // embedding that is only looked up, never multiplied (the family table's lookup_embedding),
  // and the padded vocabulary rows of the LM head.
  size_t num_flop_params() const final;

  // Forward pass on tokens (B,T). With targets (B,T) it returns the mean cross-entropy over
  // the B*T positions and prepares backward(); without targets it leaves the logits (B,T,Vp)
  // readable through logits() and returns 0. Throws on out-of-range tokens or shapes.
  float forward(const int32_t* tokens, const int32_t* targets, int B, int T) final;

  // Accumulates d(grad_scale * loss)/d(params) into grads() (+=). Requires a forward with
  // targets. hook (optional) sees every range of final gradients in buffer order.
  void backward(float grad_scale, const GradReadyHook& hook) final;
  using Model::backward;

  void route_block_weight_gradients(RoutedGradientHook on_ready) final;

  // bf16 products run in row chunks of at most elems / max(C, OC) rows (at least one), so that
  // their rounded copies stay bounded whatever the vocabulary (the LM head's dout is N x Vp);
  // 2^26 elements by default. Resizes the scratch. For tests that exercise the chunks.
  void set_linear_chunk_elems(size_t elems);

 protected:
  // Validates `config` (which must be of `family`) and the maximum batch shape, and allocates
  // the buffers whose size does not depend on the family: tokens, targets, logits, losses.
  DecoderModel(const ModelConfig& config, ModelFamily family, int max_batch, int max_seq,
               const kernels::OpTable& ops, kernels::MatmulDtype matmul_dtype);

  // Lays out the L_ blocks after the head already in layout_, in backward order L-1 .. 0:
  // add_block(l, "blocks.<l>.") adds block l's parameters, and the range each block spans is
  // recorded for block_ready(). What layout_ holds before is the head (head_ready()), what is
  // added after is the embeddings (embeddings_ready()).
  void layout_blocks(const std::function<void(int l, const std::string& prefix)>& add_block);
  // Allocates params_ and grads_ (zero) for the finished layout_, and with bf16 products the
  // bf16 mirror of params_.
  void allocate_parameters();
  // With bf16 products: sizes their scratch for products of these (C, OC) shapes at
  // max_batch x max_seq rows (the family's every product: fused ones span several views).
  void reserve_linear(std::initializer_list<std::pair<int, int>> c_oc);

  // out(N,OC) = inp(N,C) w^T + bias with w the (OC,C) matrix at params_ + w_offset, and its
  // backward (dinp += dout w, dw += dout^T inp, dbias += sum dout; dinp and dbias may be null):
  // the op table's matmul ops (fp32), or its matmul_bf16 ops on the mirror (bf16).
  void linear_forward(float* out, const float* inp, size_t w_offset, const float* bias, int N,
                      int C, int OC);
  void linear_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                       size_t w_offset, int N, int C, int OC);

  // Report to hook, when set, that a range of gradients is final: the head (final norm and
  // LM head), block l, the embeddings (the rest of the buffer).
  void head_ready(const GradReadyHook& hook) const;
  void block_ready(const GradReadyHook& hook, int l) const;
  void embeddings_ready(const GradReadyHook& hook) const;

  // Zeroes n floats of one of the model's buffers (through the op table's memory).
  void zero(float* p, size_t n) const;
  // Where backward accumulates the gradient of the parameters at flat [offset, offset + n):
  // grads_ + offset, or, when they are routed block matrices (route_block_weight_gradients()),
  // the zeroed scratch, whose views routed_done() then hands to the routing hook. Families take
  // every matrix gradient from weight_grad() and call routed_done() right after its product.
  float* weight_grad(size_t offset, size_t n);
  void routed_done();

  ModelConfig cfg_;
  const kernels::OpTable& ops_;
  int max_B_, max_T_;
  int C_, L_, V_, Vp_;  // d_model, n_layer, vocab_size, padded_vocab_resolved()
  ParamLayout layout_;
  Buffer<float> params_, grads_;  // in the op table's memory, as every buffer below
  kernels::MatmulDtype matmul_dtype_;
  Buffer<uint16_t> params_bf16_;          // bf16 products: params_ rounded, at the same offsets
  Buffer<unsigned char> linear_scratch_;  // bf16 products: the ops' scratch
  std::vector<std::pair<int, int>> linear_shapes_;  // (C, OC) of every product (reserve_linear)
  size_t linear_chunk_elems_ = size_t{1} << 26;
  int linear_rows(int C, int OC) const;  // rows per bf16 product call
  void size_linear_scratch();            // for linear_shapes_ at linear_rows() rows each

  // The batch of the last forward (buffers sized for max_B_ x max_T_).
  int B_ = 0, T_ = 0;
  bool have_targets_ = false;
  bool logits_readable_ = false;      // the last forward had no targets
  Buffer<int32_t> tokens_, targets_;  // (B,T)
  Buffer<float> logits_, losses_;     // (B,T,Vp): logits, then probabilities, then dlogits
                                      // (B,T): per-position cross-entropy
  HostBuffer<float> losses_host_;     // (B,T): losses_ read back (device memory only)

 private:
  // The family's hand-written passes. forward_logits: from the tokens_ of the batch (B,T) to
  // the logits_ (B,T,Vp). backward_from_logits: from dlogits (in place of logits_) to grads_
  // (+=), reporting final ranges through the helpers above.
  virtual void forward_logits(int B, int T) = 0;
  virtual void backward_from_logits(float* dlogits, const GradReadyHook& hook) = 0;

  const ModelFamilyInfo& family_;  // the family's row of the family table
  struct Range {
    size_t begin, end;
  };
  size_t head_end_ = 0, embeddings_begin_ = 0;  // [0, head_end_): head; then the blocks
  std::vector<Range> blocks_;                   // [l]: block l's range in the flat buffer
  // Routed gradients: the scratch of the product in flight and the views it holds (flat order).
  RoutedGradientHook routed_hook_;
  std::vector<bool> routed_view_;  // per view of layout_
  Buffer<float> scratch_;
  size_t pending_begin_ = 0, pending_end_ = 0;  // flat range in the scratch; empty: none
  void zero_unrouted_grads();

  // The steps of forward() and backward() around the family's passes.
  // Forward prologue: checks the shape against the allocation and every token (and target)
  // against the vocabulary, copies them into tokens_/targets_ and records B_, T_ and whether
  // backward() is prepared.
  void begin_forward(const int32_t* tokens, const int32_t* targets, int B, int T);
  // Forward tail with targets: softmax of logits_ in place (logits_ holds probabilities from
  // here on), per-position cross-entropy, and their mean over the N = B_*T_ positions.
  float mean_loss();
  // Backward head: requires a forward with targets; overwrites the probabilities in logits_
  // with d(grad_scale * mean loss)/d(logits) and returns them.
  float* begin_backward(float grad_scale);
  // Backward tail: the probabilities are gone, so a new forward with targets is needed.
  void end_backward() { have_targets_ = false; }
  void check_tokens(const int32_t* tokens, const int32_t* targets, int n) const;
};

}  // namespace gossamer::model
