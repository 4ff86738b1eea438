// DecoderModel: the scaffolding every decoder-only family shares, so that a family's class
// holds only its layout, initialisation and its hand-written forward and backward. It owns the
// config and layout, the flat parameter and gradient buffers, the batch of the last forward
// (tokens, targets, B, T) and the logits/probabilities and per-position losses, and implements
// the shape and token-range checks, zero_grad, the loss tail of the forward and the
// cross-entropy head of the backward.
// Invariant: the family's constructor builds layout_ and then calls allocate_parameters()
// before anything reads params()/grads(); every forward() begins with begin_forward() and
// every backward() begins with begin_backward() and ends with end_backward().
#pragma once

#include <cstdint>
#include <span>

#include "core/buffer.h"
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
  void zero_grad() final;

 protected:
  // Validates `config` (which must be of `family`) and the maximum batch shape, and allocates
  // the buffers whose size does not depend on the family: tokens, targets, logits, losses.
  DecoderModel(const ModelConfig& config, ModelFamily family, int max_batch, int max_seq,
               const kernels::OpTable& ops);

  // Allocates params_ and grads_ (zero) for the finished layout_.
  void allocate_parameters();
  // Forward prologue: checks the shape against the allocation and every token (and target)
  // against the vocabulary, copies them into tokens_/targets_ and records B_, T_ and whether
  // backward() is prepared. Returns N = B*T.
  int begin_forward(const int32_t* tokens, const int32_t* targets, int B, int T);
  // Forward tail with targets: softmax of logits_ in place (logits_ holds probabilities from
  // here on), per-position cross-entropy, and their mean over the N = B_*T_ positions.
  float mean_loss();
  // Backward head: requires a forward with targets; overwrites the probabilities in logits_
  // with d(grad_scale * mean loss)/d(logits) and returns them.
  float* begin_backward(float grad_scale);
  // Backward tail: the probabilities are gone, so a new forward with targets is needed.
  void end_backward() { have_targets_ = false; }

  static void zero(float* p, size_t n);

  ModelConfig cfg_;
  const kernels::OpTable& ops_;
  int max_B_, max_T_;
  int C_, L_, V_, Vp_;  // d_model, n_layer, vocab_size, padded_vocab_resolved()
  ParamLayout layout_;
  HostBuffer<float> params_, grads_;

  // The batch of the last forward (buffers sized for max_B_ x max_T_).
  int B_ = 0, T_ = 0;
  bool have_targets_ = false;
  HostBuffer<int32_t> tokens_, targets_;  // (B,T)
  HostBuffer<float> logits_, losses_;     // (B,T,Vp): logits, then probabilities, then dlogits
                                          // (B,T): per-position cross-entropy

 private:
  void check_tokens(const int32_t* tokens, const int32_t* targets, int n) const;
};

}  // namespace gossamer::model
