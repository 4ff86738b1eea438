// Llama forward and backward over the op table (see llama.h for the layout invariant).
// The qkv activations are saved after RoPE (attention's backward needs the rotated q and k);
// in the backward, attention's gradient with respect to the rotated q/k is rotated back in
// place (rope_backward) before the qkv product's backward.
#include "model/llama.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/rng.h"

namespace gossamer::model {

namespace {
using K = ParamKind;
void zero(float* p, size_t n) {
  std::memset(p, 0, n * sizeof(float));
}
}  // namespace

Llama::Llama(const ModelConfig& config, int max_batch, int max_seq, const kernels::OpTable& ops)
    : cfg_(config), ops_(ops) {
  cfg_.validate();
  GOSSAMER_CHECK(cfg_.family == "llama", "model: Llama built from a config of family \"%s\"",
                 cfg_.family.c_str());
  GOSSAMER_CHECK(max_batch >= 1, "model: batch size must be >= 1, found %d", max_batch);
  GOSSAMER_CHECK(max_seq >= 1 && max_seq <= cfg_.max_seq_len,
                 "model: sequence length %d must lie in [1, model.max_seq_len=%d]", max_seq,
                 cfg_.max_seq_len);
  max_B_ = max_batch, max_T_ = max_seq;
  C_ = cfg_.d_model, NH_ = cfg_.n_head, NKV_ = cfg_.n_kv_head_resolved(), L_ = cfg_.n_layer;
  hs_ = C_ / NH_, F_ = cfg_.d_ff_resolved();
  QKV_ = (NH_ + 2 * NKV_) * hs_;
  V_ = cfg_.vocab_size, Vp_ = cfg_.padded_vocab_resolved();
  build_layout();
  params_ = HostBuffer<float>(layout_.total());
  grads_ = HostBuffer<float>(layout_.total());

  const size_t BT = size_t(max_B_) * max_T_, C = C_, L = L_, F = F_, QKV = QKV_;
  const size_t att = size_t(max_B_) * NH_ * max_T_ * max_T_;
  tokens_ = HostBuffer<int32_t>(BT);
  targets_ = HostBuffer<int32_t>(BT);
  encoded_ = HostBuffer<float>(BT * C);
  attn_norm_ = HostBuffer<float>(L * BT * C);
  attn_rstd_ = HostBuffer<float>(L * BT);
  qkv_ = HostBuffer<float>(L * BT * QKV);
  atty_ = HostBuffer<float>(L * BT * C);
  att_ = HostBuffer<float>(L * att);
  residual2_ = HostBuffer<float>(L * BT * C);
  mlp_norm_ = HostBuffer<float>(L * BT * C);
  mlp_rstd_ = HostBuffer<float>(L * BT);
  gate_up_ = HostBuffer<float>(L * BT * 2 * F);
  swiglu_ = HostBuffer<float>(L * BT * F);
  residual3_ = HostBuffer<float>(L * BT * C);
  norm_f_out_ = HostBuffer<float>(BT * C);
  norm_f_rstd_ = HostBuffer<float>(BT);
  logits_ = HostBuffer<float>(BT * Vp_);
  losses_ = HostBuffer<float>(BT);
  dresidual_ = HostBuffer<float>(BT * C);
  dbt_c_ = HostBuffer<float>(BT * C);
  dqkv_ = HostBuffer<float>(BT * QKV);
  dswiglu_ = HostBuffer<float>(BT * F);
  dgate_up_ = HostBuffer<float>(BT * 2 * F);
  datt_ = HostBuffer<float>(att);
}

void Llama::build_layout() {
  const int64_t C = C_, F = F_, Q = int64_t(NH_) * hs_, KV = int64_t(NKV_) * hs_;
  // Embeddings (wte, lm_head) are not decayed, as GPT-2's are not: PARAM_KIND_EMBEDDING.
  lm_head_ = layout_.add("lm_head.weight", {Vp_, C}, K::PARAM_KIND_EMBEDDING);
  norm_f_ = layout_.add("norm_f.weight", {C}, K::PARAM_KIND_NORM);
  norm_f_end_ = layout_.total();
  layers_.resize(L_);
  for (int l = L_ - 1; l >= 0; --l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    LayerOffsets& o = layers_[l];
    o.begin = layout_.total();
    o.down = layout_.add(p + "mlp.down.weight", {C, F}, K::PARAM_KIND_WEIGHT);
    o.gate_up = layout_.add(p + "mlp.gate.weight", {F, C}, K::PARAM_KIND_WEIGHT);
    layout_.add(p + "mlp.up.weight", {F, C}, K::PARAM_KIND_WEIGHT);  // rows F..2F of gate_up
    o.mlp_norm = layout_.add(p + "mlp_norm.weight", {C}, K::PARAM_KIND_NORM);
    o.o = layout_.add(p + "attn.o.weight", {C, Q}, K::PARAM_KIND_WEIGHT);
    o.qkv = layout_.add(p + "attn.q.weight", {Q, C}, K::PARAM_KIND_WEIGHT);
    layout_.add(p + "attn.k.weight", {KV, C}, K::PARAM_KIND_WEIGHT);  // rows Q..Q+KV of qkv
    layout_.add(p + "attn.v.weight", {KV, C}, K::PARAM_KIND_WEIGHT);  // rows Q+KV..Q+2KV
    o.attn_norm = layout_.add(p + "attn_norm.weight", {C}, K::PARAM_KIND_NORM);
    o.end = layout_.total();
  }
  wte_ = layout_.add("wte", {Vp_, C}, K::PARAM_KIND_EMBEDDING);
}

void Llama::init_weights(uint64_t seed) {
  Rng rng(seed, /*stream=*/0x6c6c'616d);  // "llam"
  const double std = cfg_.init_std;
  const double proj_std = std / std::sqrt(2.0 * L_);
  float* p = params_.data();
  for (const ParamView& v : layout_.views()) {
    float* x = p + v.offset;
    if (v.kind == K::PARAM_KIND_NORM) {
      for (size_t i = 0; i < v.numel; ++i) x[i] = 1.0f;
      continue;
    }
    const bool residual_proj =
        v.name.ends_with("attn.o.weight") || v.name.ends_with("mlp.down.weight");
    const double s = residual_proj ? proj_std : std;
    size_t n = v.numel;
    if (v.kind == K::PARAM_KIND_EMBEDDING) n = size_t(V_) * C_;  // padded rows stay zero
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(s * rng.normal());
    for (size_t i = n; i < v.numel; ++i) x[i] = 0.0f;
  }
}

size_t Llama::num_flop_params() const {
  return layout_.total() - size_t(Vp_) * C_ - size_t(Vp_ - V_) * C_;
}

void Llama::zero_grad() {
  zero(grads_.data(), grads_.size());
}

void Llama::check_tokens(const int32_t* tokens, const int32_t* targets, int n) const {
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

float Llama::forward(const int32_t* tokens, const int32_t* targets, int B, int T) {
  GOSSAMER_CHECK(B >= 1 && B <= max_B_ && T >= 1 && T <= max_T_,
                 "model: batch (%d, %d) exceeds the allocated (%d, %d)", B, T, max_B_, max_T_);
  const int N = B * T;
  check_tokens(tokens, targets, N);
  B_ = B, T_ = T, have_targets_ = targets != nullptr;
  std::memcpy(tokens_.data(), tokens, N * sizeof(int32_t));
  if (targets) std::memcpy(targets_.data(), targets, N * sizeof(int32_t));

  const size_t C = C_, BTC = size_t(N) * C, BT = N, BTF = size_t(N) * F_;
  const size_t BTQKV = size_t(N) * QKV_;
  const size_t att_stride = size_t(B) * NH_ * T * T;
  const double eps = cfg_.norm_eps, theta = cfg_.rope_theta;
  const float* p = params_.data();
  ops_.encoder_forward(encoded_.data(), tokens_.data(), p + wte_, nullptr, B, T, C_);

  for (int l = 0; l < L_; ++l) {
    const LayerOffsets& o = layers_[l];
    const float* residual = l == 0 ? encoded_.data() : residual3_.data() + (l - 1) * BTC;
    float* attn_norm = attn_norm_.data() + l * BTC;
    float* qkv = qkv_.data() + l * BTQKV;
    float* atty = atty_.data() + l * BTC;
    float* att = att_.data() + l * att_stride;
    float* residual2 = residual2_.data() + l * BTC;
    float* mlp_norm = mlp_norm_.data() + l * BTC;
    float* gate_up = gate_up_.data() + l * 2 * BTF;
    float* swiglu = swiglu_.data() + l * BTF;
    float* residual3 = residual3_.data() + l * BTC;

    ops_.rmsnorm_forward(attn_norm, attn_rstd_.data() + l * BT, residual, p + o.attn_norm, N, C_,
                         eps);
    ops_.matmul_forward(qkv, attn_norm, p + o.qkv, nullptr, N, C_, QKV_);
    ops_.rope_forward(qkv, B, T, NH_ + NKV_, hs_, QKV_, theta);  // q and k heads are adjacent
    ops_.attention_forward(atty, att, qkv, B, T, NH_ * hs_, NH_, NKV_);
    ops_.matmul_forward(residual2, atty, p + o.o, nullptr, N, NH_ * hs_, C_);
    ops_.accumulate(residual2, residual, BTC);
    ops_.rmsnorm_forward(mlp_norm, mlp_rstd_.data() + l * BT, residual2, p + o.mlp_norm, N, C_,
                         eps);
    ops_.matmul_forward(gate_up, mlp_norm, p + o.gate_up, nullptr, N, C_, 2 * F_);
    ops_.swiglu_forward(swiglu, gate_up, N, F_);
    ops_.matmul_forward(residual3, swiglu, p + o.down, nullptr, N, F_, C_);
    ops_.accumulate(residual3, residual2, BTC);
  }
  const float* last = residual3_.data() + (L_ - 1) * BTC;
  ops_.rmsnorm_forward(norm_f_out_.data(), norm_f_rstd_.data(), last, p + norm_f_, N, C_, eps);
  ops_.matmul_forward(logits_.data(), norm_f_out_.data(), p + lm_head_, nullptr, N, C_, Vp_);
  if (!targets) return 0.0f;

  // Softmax in place: logits_ holds probabilities from here on.
  ops_.crossentropy_forward(losses_.data(), logits_.data(), logits_.data(), targets_.data(), N, V_,
                            Vp_);
  double sum = 0;
  for (int i = 0; i < N; ++i) sum += losses_[i];
  return static_cast<float>(sum / N);
}

void Llama::backward(float grad_scale, const GradReadyHook& hook) {
  GOSSAMER_CHECK(have_targets_, "model: backward() needs a forward() with targets first");
  const int B = B_, T = T_, N = B * T;
  const size_t C = C_, BTC = size_t(N) * C, BT = N, BTF = size_t(N) * F_;
  const size_t BTQKV = size_t(N) * QKV_;
  const size_t att_stride = size_t(B) * NH_ * T * T;
  const int Q = NH_ * hs_;
  const float* p = params_.data();
  float* g = grads_.data();

  // LM head and final RMSNorm. dlogits overwrite the probabilities in place.
  float* dlogits = logits_.data();
  ops_.crossentropy_backward(dlogits, logits_.data(), targets_.data(), grad_scale / N, N, V_, Vp_);
  float* dnorm_f = dbt_c_.data();
  zero(dnorm_f, BTC);
  ops_.matmul_backward(dnorm_f, g + lm_head_, nullptr, dlogits, norm_f_out_.data(), p + lm_head_, N,
                       C_, Vp_);
  float* dres = dresidual_.data();
  zero(dres, BTC);
  ops_.rmsnorm_backward(dres, g + norm_f_, dnorm_f, residual3_.data() + (L_ - 1) * BTC, p + norm_f_,
                        norm_f_rstd_.data(), N, C_);
  if (hook) hook(0, norm_f_end_);

  for (int l = L_ - 1; l >= 0; --l) {
    const LayerOffsets& o = layers_[l];
    const float* residual = l == 0 ? encoded_.data() : residual3_.data() + (l - 1) * BTC;
    const float* attn_norm = attn_norm_.data() + l * BTC;
    const float* qkv = qkv_.data() + l * BTQKV;
    const float* atty = atty_.data() + l * BTC;
    const float* att = att_.data() + l * att_stride;
    const float* residual2 = residual2_.data() + l * BTC;
    const float* mlp_norm = mlp_norm_.data() + l * BTC;
    const float* gate_up = gate_up_.data() + l * 2 * BTF;
    const float* swiglu = swiglu_.data() + l * BTF;

    // residual3 = residual2 + down(swiglu(gate_up(mlp_norm(residual2)))); dres is d(residual3)
    // and becomes d(residual2).
    zero(dswiglu_.data(), BTF);
    ops_.matmul_backward(dswiglu_.data(), g + o.down, nullptr, dres, swiglu, p + o.down, N, F_, C_);
    zero(dgate_up_.data(), 2 * BTF);
    ops_.swiglu_backward(dgate_up_.data(), dswiglu_.data(), gate_up, N, F_);
    float* dmlp_norm = dbt_c_.data();
    zero(dmlp_norm, BTC);
    ops_.matmul_backward(dmlp_norm, g + o.gate_up, nullptr, dgate_up_.data(), mlp_norm,
                         p + o.gate_up, N, C_, 2 * F_);
    ops_.rmsnorm_backward(dres, g + o.mlp_norm, dmlp_norm, residual2, p + o.mlp_norm,
                          mlp_rstd_.data() + l * BT, N, C_);

    // residual2 = residual + o(attn(rope(qkv(attn_norm(residual))))); dres becomes
    // d(residual).
    float* datty = dbt_c_.data();
    zero(datty, BTC);
    ops_.matmul_backward(datty, g + o.o, nullptr, dres, atty, p + o.o, N, Q, C_);
    zero(dqkv_.data(), BTQKV);
    ops_.attention_backward(dqkv_.data(), datt_.data(), datty, qkv, att, B, T, Q, NH_, NKV_);
    ops_.rope_backward(dqkv_.data(), B, T, NH_ + NKV_, hs_, QKV_, cfg_.rope_theta);
    float* dattn_norm = dbt_c_.data();
    zero(dattn_norm, BTC);
    ops_.matmul_backward(dattn_norm, g + o.qkv, nullptr, dqkv_.data(), attn_norm, p + o.qkv, N, C_,
                         QKV_);
    ops_.rmsnorm_backward(dres, g + o.attn_norm, dattn_norm, residual, p + o.attn_norm,
                          attn_rstd_.data() + l * BT, N, C_);
    if (hook) hook(o.begin, o.end);
  }
  ops_.encoder_backward(g + wte_, nullptr, dres, tokens_.data(), B, T, C_);
  if (hook) hook(wte_, layout_.total());
  have_targets_ = false;  // the probabilities were overwritten by their gradient
}

}  // namespace gossamer::model
