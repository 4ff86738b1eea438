// Llama forward and backward over the op table (see llama.h for the layout invariant).
// The qkv activations are saved after RoPE (attention's backward needs the rotated q and k);
// in the backward, attention's gradient with respect to the rotated q/k is rotated back in
// place (rope_backward) before the qkv product's backward. Also the family's config validation.
#include "model/llama.h"

#include <string>

#include "core/error.h"

namespace gossamer::model {

namespace {
using K = ParamKind;
}  // namespace

void Llama::validate_config(const ModelConfig& c, const std::string& p) {
  const int hs = c.d_model / c.n_head;
  GOSSAMER_CHECK(hs % 2 == 0,
                 "%sn_head: llama's rotary embedding needs an even head size d_model/n_head, "
                 "found %d/%d = %d",
                 p.c_str(), c.d_model, c.n_head, hs);
}

Llama::Llama(const ModelConfig& config, int max_batch, int max_seq, const kernels::OpTable& ops,
             kernels::MatmulDtype matmul_dtype)
    : DecoderModel(config, ModelFamily::MODEL_FAMILY_LLAMA, max_batch, max_seq, ops, matmul_dtype) {
  NH_ = cfg_.n_head, NKV_ = cfg_.n_kv_head_resolved();
  hs_ = C_ / NH_, F_ = cfg_.d_ff_resolved();
  QKV_ = (NH_ + 2 * NKV_) * hs_;
  build_layout();
  allocate_parameters();
  reserve_linear({{C_, QKV_}, {NH_ * hs_, C_}, {C_, 2 * F_}, {F_, C_}, {C_, Vp_}});

  Buffer<float>* activations[] = {
      &encoded_,   &attn_norm_, &attn_rstd_, &qkv_,     &atty_,      &att_saved_,  &residual2_,
      &mlp_norm_,  &mlp_rstd_,  &gate_up_,   &swiglu_,  &residual3_, &norm_f_out_, &norm_f_rstd_,
      &dresidual_, &dbt_c_,     &dqkv_,      &dswiglu_, &dgate_up_,  &att_scratch_};
  allocate_activations(activations, activation_sizes(cfg_, max_B_, max_T_, ops_));
}

size_t Llama::parameter_count(const ModelConfig& c) {
  const size_t C = c.d_model, F = c.d_ff_resolved(), L = c.n_layer, hs = C / c.n_head;
  const size_t Q = size_t(c.n_head) * hs, KV = size_t(c.n_kv_head_resolved()) * hs;
  const size_t block = C + (Q + 2 * KV) * C + C * Q + C + 2 * F * C + C * F;
  return 2 * size_t(c.padded_vocab_resolved()) * C + C + L * block;
}

std::vector<size_t> Llama::activation_sizes(const ModelConfig& c, int max_batch, int max_seq,
                                            const kernels::OpTable& ops) {
  const size_t BT = size_t(max_batch) * max_seq, C = c.d_model, L = c.n_layer;
  const size_t F = c.d_ff_resolved(), hs = C / c.n_head;
  const size_t QKV = (size_t(c.n_head) + 2 * size_t(c.n_kv_head_resolved())) * hs;
  const size_t saved = ops.attention_saved_size(max_batch, max_seq, c.n_head);
  return {BT * C,     L * BT * C,
          L * BT,     L * BT * QKV,
          L * BT * C, L * saved,
          L * BT * C, L * BT * C,
          L * BT,     L * BT * 2 * F,
          L * BT * F, L * BT * C,
          BT * C,     BT,
          BT * C,     BT * C,
          BT * QKV,   BT * F,
          BT * 2 * F, ops.attention_scratch_size(max_batch, max_seq, c.n_head)};
}

void Llama::build_layout() {
  const int64_t C = C_, F = F_, Q = int64_t(NH_) * hs_, KV = int64_t(NKV_) * hs_;
  // Embeddings (wte, lm_head) are not decayed, as GPT-2's are not: PARAM_KIND_EMBEDDING.
  lm_head_ = layout_.add("lm_head.weight", {Vp_, C}, K::PARAM_KIND_EMBEDDING);
  lm_head_w_ = lm_head_;
  norm_f_ = layout_.add("norm_f.weight", {C}, K::PARAM_KIND_NORM);
  layers_.resize(L_);
  layout_blocks([&](int l, const std::string& p) {
    LayerOffsets& o = layers_[l];
    o.down = layout_.add(p + "mlp.down.weight", {C, F}, K::PARAM_KIND_WEIGHT);
    o.gate_up = layout_.add(p + "mlp.gate.weight", {F, C}, K::PARAM_KIND_WEIGHT);
    layout_.add(p + "mlp.up.weight", {F, C}, K::PARAM_KIND_WEIGHT);  // rows F..2F of gate_up
    o.mlp_norm = layout_.add(p + "mlp_norm.weight", {C}, K::PARAM_KIND_NORM);
    o.o = layout_.add(p + "attn.o.weight", {C, Q}, K::PARAM_KIND_WEIGHT);
    o.qkv = layout_.add(p + "attn.q.weight", {Q, C}, K::PARAM_KIND_WEIGHT);
    layout_.add(p + "attn.k.weight", {KV, C}, K::PARAM_KIND_WEIGHT);  // rows Q..Q+KV of qkv
    layout_.add(p + "attn.v.weight", {KV, C}, K::PARAM_KIND_WEIGHT);  // rows Q+KV..Q+2KV
    o.attn_norm = layout_.add(p + "attn_norm.weight", {C}, K::PARAM_KIND_NORM);
  });
  wte_ = layout_.add("wte", {Vp_, C}, K::PARAM_KIND_EMBEDDING);
}

const float* Llama::forward_hidden(int B, int T) {
  const int N = B * T;
  const size_t C = C_, BTC = size_t(N) * C, BT = N, BTF = size_t(N) * F_;
  const size_t BTQKV = size_t(N) * QKV_;
  const size_t saved_stride = ops_.attention_saved_size(B, T, NH_);
  const double eps = cfg_.norm_eps, theta = cfg_.rope_theta;
  const float* p = params_.data();
  ops_.encoder_forward(encoded_.data(), tokens_.data(), p + wte_, nullptr, B, T, C_);

  for (int l = 0; l < L_; ++l) {
    const LayerOffsets& o = layers_[l];
    const float* residual = l == 0 ? encoded_.data() : residual3_.data() + (l - 1) * BTC;
    float* attn_norm = attn_norm_.data() + l * BTC;
    float* qkv = qkv_.data() + l * BTQKV;
    float* atty = atty_.data() + l * BTC;
    float* att_saved = att_saved_.data() + l * saved_stride;
    float* residual2 = residual2_.data() + l * BTC;
    float* mlp_norm = mlp_norm_.data() + l * BTC;
    float* gate_up = gate_up_.data() + l * 2 * BTF;
    float* swiglu = swiglu_.data() + l * BTF;
    float* residual3 = residual3_.data() + l * BTC;

    ops_.rmsnorm_forward(attn_norm, attn_rstd_.data() + l * BT, residual, p + o.attn_norm, N, C_,
                         eps);
    linear_forward(qkv, attn_norm, o.qkv, nullptr, N, C_, QKV_);
    ops_.rope_forward(qkv, B, T, NH_ + NKV_, hs_, QKV_, theta);  // q and k heads are adjacent
    ops_.attention_forward(atty, att_saved, qkv, B, T, NH_ * hs_, NH_, NKV_);
    count_attention(B, T, NH_ * hs_, false);
    linear_forward(residual2, atty, o.o, nullptr, N, NH_ * hs_, C_);
    ops_.accumulate(residual2, residual, BTC);
    ops_.rmsnorm_forward(mlp_norm, mlp_rstd_.data() + l * BT, residual2, p + o.mlp_norm, N, C_,
                         eps);
    linear_forward(gate_up, mlp_norm, o.gate_up, nullptr, N, C_, 2 * F_);
    ops_.swiglu_forward(swiglu, gate_up, N, F_);
    linear_forward(residual3, swiglu, o.down, nullptr, N, F_, C_);
    ops_.accumulate(residual3, residual2, BTC);
  }
  const float* last = residual3_.data() + (L_ - 1) * BTC;
  ops_.rmsnorm_forward(norm_f_out_.data(), norm_f_rstd_.data(), last, p + norm_f_, N, C_, eps);
  return norm_f_out_.data();
}

void Llama::backward_from_hidden(const float* dnorm_f, const GradReadyHook& hook) {
  const int B = B_, T = T_, N = B * T;
  const size_t C = C_, BTC = size_t(N) * C, BT = N, BTF = size_t(N) * F_;
  const size_t BTQKV = size_t(N) * QKV_;
  const size_t saved_stride = ops_.attention_saved_size(B, T, NH_);
  const int Q = NH_ * hs_;
  const float* p = params_.data();
  float* g = grads_.data();

  // Final RMSNorm (the LM head is DecoderModel's).
  float* dres = dresidual_.data();
  zero(dres, BTC);
  ops_.rmsnorm_backward(dres, g + norm_f_, dnorm_f, residual3_.data() + (L_ - 1) * BTC, p + norm_f_,
                        norm_f_rstd_.data(), N, C_);
  head_ready(hook);

  for (int l = L_ - 1; l >= 0; --l) {
    const LayerOffsets& o = layers_[l];
    const float* residual = l == 0 ? encoded_.data() : residual3_.data() + (l - 1) * BTC;
    const float* attn_norm = attn_norm_.data() + l * BTC;
    const float* qkv = qkv_.data() + l * BTQKV;
    const float* atty = atty_.data() + l * BTC;
    const float* att_saved = att_saved_.data() + l * saved_stride;
    const float* residual2 = residual2_.data() + l * BTC;
    const float* mlp_norm = mlp_norm_.data() + l * BTC;
    const float* gate_up = gate_up_.data() + l * 2 * BTF;
    const float* swiglu = swiglu_.data() + l * BTF;

    // residual3 = residual2 + down(swiglu(gate_up(mlp_norm(residual2)))); dres is d(residual3)
    // and becomes d(residual2).
    zero(dswiglu_.data(), BTF);
    linear_backward(dswiglu_.data(), weight_grad(o.down, C * F_), nullptr, dres, swiglu, o.down, N,
                    F_, C_);
    routed_done();
    zero(dgate_up_.data(), 2 * BTF);
    ops_.swiglu_backward(dgate_up_.data(), dswiglu_.data(), gate_up, N, F_);
    float* dmlp_norm = dbt_c_.data();
    zero(dmlp_norm, BTC);
    linear_backward(dmlp_norm, weight_grad(o.gate_up, 2 * F_ * C), nullptr, dgate_up_.data(),
                    mlp_norm, o.gate_up, N, C_, 2 * F_);
    routed_done();
    ops_.rmsnorm_backward(dres, g + o.mlp_norm, dmlp_norm, residual2, p + o.mlp_norm,
                          mlp_rstd_.data() + l * BT, N, C_);

    // residual2 = residual + o(attn(rope(qkv(attn_norm(residual))))); dres becomes
    // d(residual).
    float* datty = dbt_c_.data();
    zero(datty, BTC);
    linear_backward(datty, weight_grad(o.o, C * Q), nullptr, dres, atty, o.o, N, Q, C_);
    routed_done();
    zero(dqkv_.data(), BTQKV);
    ops_.attention_backward(dqkv_.data(), att_scratch_.data(), datty, qkv, atty, att_saved, B, T, Q,
                            NH_, NKV_);
    count_attention(B, T, Q, true);
    ops_.rope_backward(dqkv_.data(), B, T, NH_ + NKV_, hs_, QKV_, cfg_.rope_theta);
    float* dattn_norm = dbt_c_.data();
    zero(dattn_norm, BTC);
    linear_backward(dattn_norm, weight_grad(o.qkv, QKV_ * C), nullptr, dqkv_.data(), attn_norm,
                    o.qkv, N, C_, QKV_);
    routed_done();
    ops_.rmsnorm_backward(dres, g + o.attn_norm, dattn_norm, residual, p + o.attn_norm,
                          attn_rstd_.data() + l * BT, N, C_);
    block_ready(hook, l);
  }
  ops_.encoder_backward(g + wte_, nullptr, dres, tokens_.data(), B, T, C_);
  embeddings_ready(hook);
}

}  // namespace gossamer::model
