// The shared scaffolding of the decoder-only families (see decoder_model.h): checks, buffers,
// the loss tail of the forward and the cross-entropy head of the backward.
#include "model/decoder_model.h"

#include <cstring>

#include "core/error.h"

namespace gossamer::model {

DecoderModel::DecoderModel(const ModelConfig& config, ModelFamily family, int max_batch,
                           int max_seq, const kernels::OpTable& ops)
    : cfg_(config), ops_(ops) {
  cfg_.validate();
  GOSSAMER_CHECK(cfg_.family == family, "model: a %s model built from a config of family \"%s\"",
                 family_name(family), family_name(cfg_.family));
  GOSSAMER_CHECK(max_batch >= 1, "model: batch size must be >= 1, found %d", max_batch);
  GOSSAMER_CHECK(max_seq >= 1 && max_seq <= cfg_.max_seq_len,
                 "model: sequence length %d must lie in [1, model.max_seq_len=%d]", max_seq,
                 cfg_.max_seq_len);
  max_B_ = max_batch, max_T_ = max_seq;
  C_ = cfg_.d_model, L_ = cfg_.n_layer;
  V_ = cfg_.vocab_size, Vp_ = cfg_.padded_vocab_resolved();
  const size_t BT = size_t(max_B_) * max_T_;
  tokens_ = HostBuffer<int32_t>(BT);
  targets_ = HostBuffer<int32_t>(BT);
  logits_ = HostBuffer<float>(BT * Vp_);
  losses_ = HostBuffer<float>(BT);
}

void DecoderModel::allocate_parameters() {
  params_ = HostBuffer<float>(layout_.total());
  grads_ = HostBuffer<float>(layout_.total());
}

void DecoderModel::zero(float* p, size_t n) {
  std::memset(p, 0, n * sizeof(float));
}

void DecoderModel::zero_grad() {
  zero(grads_.data(), grads_.size());
}

void DecoderModel::check_tokens(const int32_t* tokens, const int32_t* targets, int n) const {
  for (int i = 0; i < n; ++i) {
    GOSSAMER_CHECK(tokens[i] >= 0 && tokens[i] < V_,
                   "model: input token %d at position %d is outside [0, vocab_size=%d)", tokens[i],
                   i, V_);
    if (targets)
      GOSSAMER_CHECK(targets[i] >= 0 && targets[i] < V_,
                     "model: target token %d at position %d is outside [0, vocab_size=%d)",
                     targets[i], i, V_);
  }
}

int DecoderModel::begin_forward(const int32_t* tokens, const int32_t* targets, int B, int T) {
  GOSSAMER_CHECK(B >= 1 && B <= max_B_ && T >= 1 && T <= max_T_,
                 "model: batch (%d, %d) exceeds the allocated (%d, %d)", B, T, max_B_, max_T_);
  const int N = B * T;
  check_tokens(tokens, targets, N);
  B_ = B, T_ = T, have_targets_ = targets != nullptr;
  std::memcpy(tokens_.data(), tokens, N * sizeof(int32_t));
  if (targets) std::memcpy(targets_.data(), targets, N * sizeof(int32_t));
  return N;
}

float DecoderModel::mean_loss() {
  const int N = B_ * T_;
  ops_.crossentropy_forward(losses_.data(), logits_.data(), logits_.data(), targets_.data(), N, V_,
                            Vp_);
  double sum = 0;
  for (int i = 0; i < N; ++i) sum += losses_[i];
  return static_cast<float>(sum / N);
}

float* DecoderModel::begin_backward(float grad_scale) {
  GOSSAMER_CHECK(have_targets_, "model: backward() needs a forward() with targets first");
  const int N = B_ * T_;
  float* dlogits = logits_.data();
  ops_.crossentropy_backward(dlogits, logits_.data(), targets_.data(), grad_scale / N, N, V_, Vp_);
  return dlogits;
}

}  // namespace gossamer::model
