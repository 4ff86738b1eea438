// DecoderModel: the scaffolding every decoder-only family shares, so that a family's class
// holds only its layout and its hand-written forward and backward. It owns the config and
// layout, the flat parameter and gradient buffers, the batch of the last forward (tokens,
// targets, B, T), the LM head with the cross-entropy and the per-position losses, and
// implements the shape and token-range checks, zero_grad, the initialisation and the FLOP count
// (from the family's row of the family table), and the backward-order layout of the blocks with
// their gradient-ready ranges.
// The LM head is fused with the cross-entropy in row chunks: a forward with targets makes each
// chunk's logits, then in one op their losses and d(mean loss)/d(logits) in their place
// (crossentropy_forward_backward), then that chunk's share of the head's two gradient products
// (the final hidden state's gradient and the head matrix's, kept aside until backward() scales
// them by its grad_scale).
// No (B,T,Vp) logits are kept for backward: one chunk of rows is (see linear_rows()). The two
// gradients kept aside are made at the first forward with targets (a model that only evaluates
// or samples has none). A forward without targets writes its full logits into the same buffer
// as the chunks, grown, when the chunk is smaller, to B rows of max_seq positions: sampling,
// which lengthens T by one token per call, allocates at most once, and a model that both
// trains and samples holds the larger of the two, not both.
// Every buffer is a Buffer<T> in the op table's memory; the host-side work (token checks, the
// initial weights, the loss sum) runs on the host and moves data through it explicitly (uploads
// of tokens and initial weights, a read-back of the per-position losses).
// Invariant: the family's constructor builds layout_ (head, then layout_blocks(), then the
// embeddings), sets lm_head_w_, and then calls allocate_parameters() before anything reads
// params()/grads(); forward(), eval_loss() and backward() are final: they wrap the family's
// forward_hidden() and backward_from_hidden() in the checks and the LM head with its loss. Families
// take every matrix gradient from weight_grad() and call routed_done() after its product, so that
// routed gradients (route_block_weight_gradients()) go through the scratch. Families run every
// product with a weight matrix through linear_forward() / linear_backward(), so that the
// model's matmul dtype applies to all of them; with bf16 the mirror of the weights is
// refreshed from params() at every forward (the optimizer updates params() in between).
#pragma once

#include <atomic>
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

// Rows x width of one LM-head chunk and of one bf16 product call, at most (2^26 floats).
constexpr size_t kLinearChunkElems = size_t{1} << 26;

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
  const float* logits() const final { return head_out_.data(); }
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
  double flops_done() const final { return flops_done_.load(std::memory_order_relaxed); }

  // Forward pass on tokens (B,T). With targets (B,T) it returns the mean cross-entropy over
  // the B*T positions and prepares backward() (the LM head's gradients are made here, chunk by
  // chunk); without targets it leaves the logits (B,T,Vp) readable through logits() and
  // returns 0. Throws on out-of-range tokens or shapes.
  float forward(const int32_t* tokens, const int32_t* targets, int B, int T) final;
  // The same mean cross-entropy as forward() with targets, with no gradient work: the chunks'
  // logits become losses only, and backward() is not prepared.
  float eval_loss(const int32_t* tokens, const int32_t* targets, int B, int T) final;

  // Accumulates d(grad_scale * loss)/d(params) into grads() (+=). Requires a forward with
  // targets. hook (optional) sees every range of final gradients in buffer order.
  void backward(float grad_scale, const GradReadyHook& hook) final;
  using Model::backward;

  void route_block_weight_gradients(RoutedGradientHook on_ready) final;

  // The LM head with its cross-entropy, and every bf16 product, run in row chunks of at most
  // elems / max(C, OC) rows (at least one), so that a chunk's logits and the products' rounded
  // copies stay bounded whatever the vocabulary; 2^26 elements by default. Resizes the chunk
  // buffers. For tests that exercise the chunks.
  void set_linear_chunk_elems(size_t elems);
  int head_chunk_rows() const final { return linear_rows(C_, Vp_); }
  double forward_backward_seconds() const final { return head_backward_s_; }

 protected:
  // Validates `config` (which must be of `family`) and the maximum batch shape, and allocates
  // the buffers whose size does not depend on the family: tokens, targets, losses, the LM
  // head's chunk.
  DecoderModel(const ModelConfig& config, ModelFamily family, int max_batch, int max_seq,
               const kernels::OpTable& ops, kernels::MatmulDtype matmul_dtype);

  // Lays out the L_ blocks after the head already in layout_, in backward order L-1 .. 0:
  // add_block(l, "blocks.<l>.") adds block l's parameters, and the range each block spans is
  // recorded for block_ready(). What layout_ holds before is the head (head_ready()), what is
  // added after is the embeddings (embeddings_ready()).
  void layout_blocks(const std::function<void(int l, const std::string& prefix)>& add_block);
  // Allocates params_ and grads_ (zero) for the finished layout_, and with bf16 products the
  // bf16 mirror of params_. Checks that lm_head_w_ is the offset of a (Vp, C) view.
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
  // Counts an attention op's products in flops_done(): causal QK^T and AV over Q query
  // dimensions, 2 B T^2 Q forward and twice that backward (the 6LCT term's share).
  void count_attention(int B, int T, int Q, bool backward);

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
  // Offset of the LM head's (Vp, C) matrix (GPT-2: wte, tied); the family sets it.
  size_t lm_head_w_ = SIZE_MAX;
  Buffer<float> params_, grads_;  // in the op table's memory, as every buffer below
  kernels::MatmulDtype matmul_dtype_;
  Buffer<uint16_t> params_bf16_;          // bf16 products: params_ rounded, at the same offsets
  Buffer<unsigned char> linear_scratch_;  // bf16 products: the ops' scratch
  std::vector<std::pair<int, int>> linear_shapes_;  // (C, OC) of every product (reserve_linear)
  size_t linear_chunk_elems_ = kLinearChunkElems;
  double head_backward_s_ = 0;           // the last forward's head gradient products (seconds)
  int linear_rows(int C, int OC) const;  // rows per bf16 product call and per LM-head chunk
  // Allocates each activation buffer with its size (a family's activation_sizes(), in the order
  // of `buffers`); throws if the two lists differ in length.
  void allocate_activations(std::span<Buffer<float>* const> buffers,
                            const std::vector<size_t>& sizes);
  void size_linear_scratch();  // for linear_shapes_ at linear_rows() rows each

  // The batch of the last forward (buffers sized for max_B_ x max_T_).
  int B_ = 0, T_ = 0;
  bool backward_ready_ = false;       // backward() is prepared
  bool logits_readable_ = false;      // the last forward had no targets
  Buffer<int32_t> tokens_, targets_;  // (B,T)
  Buffer<float> losses_;              // (B,T): per-position cross-entropy
  HostBuffer<float> losses_host_;     // (B,T): losses_ read back (device memory only)

 private:
  // The family's hand-written passes. forward_hidden: from the tokens_ of the batch (B,T) to
  // the final norm's output (B,T,C), the LM head's input, which it returns (it must stay
  // valid until the next forward). backward_from_hidden: from its gradient dhidden (B,T,C) to
  // grads_ (+=), reporting final ranges through the helpers above (the head's range after the
  // final norm's gradients; the LM head's matrix gradient is in grads_ by then).
  virtual const float* forward_hidden(int B, int T) = 0;
  virtual void backward_from_hidden(const float* dhidden, const GradReadyHook& hook) = 0;

  const ModelFamilyInfo& family_;  // the family's row of the family table
  struct Range {
    size_t begin, end;
  };
  size_t head_end_ = 0, embeddings_begin_ = 0;  // [0, head_end_): head; then the blocks
  // flops_done(): written by the thread that runs the passes, read by any (a simulated clock).
  std::atomic<double> flops_done_{0};
  void count_flops(double flops) {
    flops_done_.store(flops_done_.load(std::memory_order_relaxed) + flops,
                      std::memory_order_relaxed);
  }
  std::vector<Range> blocks_;  // [l]: block l's range in the flat buffer
  // Routed gradients: the scratch of the product in flight and the views it holds (flat order).
  RoutedGradientHook routed_hook_;
  std::vector<bool> routed_view_;  // per view of layout_
  Buffer<float> scratch_;
  size_t pending_begin_ = 0, pending_end_ = 0;  // flat range in the scratch; empty: none
  void zero_unrouted_grads();

  // The LM head and its cross-entropy (see the top of this file).
  // One buffer for the head's output: a chunk (rows, Vp) of logits, then probabilities or
  // dlogits; after a forward without targets, the logits (B,T,Vp), grown to B_ x max_seq rows.
  Buffer<float> head_out_;
  Buffer<float> dhidden_;    // (B,T,C): d(mean loss)/d(hidden), scaled in backward()
  Buffer<float> head_grad_;  // (Vp,C): d(mean loss)/d(head matrix), added in backward()
  void size_head_chunk();

  // The steps of forward() and backward() around the family's passes.
  // Forward prologue: checks the shape against the allocation and every token (and target)
  // against the vocabulary, copies them into tokens_/targets_ and records B_ and T_.
  void begin_forward(const int32_t* tokens, const int32_t* targets, int B, int T);
  // begin_forward(), the bf16 mirror of the weights refreshed, then the family's forward up to
  // the hidden state, which it returns; backward() is no longer prepared.
  const float* forward_to_hidden(const int32_t* tokens, const int32_t* targets, int B, int T);
  // The LM head over `hidden` in row chunks: each chunk's logits and per-position losses;
  // with_gradients, in the same op d(mean loss)/d(logits), and its products into dhidden_ and
  // head_grad_. Returns the mean loss over the N = B_*T_ positions.
  float head_loss(const float* hidden, bool with_gradients);
  // The LM head over `hidden` into head_out_ (B_,T_,Vp), grown to fit.
  void head_logits(const float* hidden);
  void check_tokens(const int32_t* tokens, const int32_t* targets, int n) const;
};

}  // namespace gossamer::model
