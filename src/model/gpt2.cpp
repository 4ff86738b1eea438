// GPT-2 forward and backward over the op table (see gpt2.h for the layout invariant), and
// the family's config validation.
#include "model/gpt2.h"

#include <string>

#include "core/error.h"

namespace gossamer::model {

namespace {
using K = ParamKind;
}  // namespace

void Gpt2::validate_config(const ModelConfig& c, const std::string& p) {
  GOSSAMER_CHECK(c.n_kv_head == 0 || c.n_kv_head == c.n_head,
                 "%sn_kv_head: gpt2 has no grouped-query attention (leave it 0), found %d",
                 p.c_str(), c.n_kv_head);
  GOSSAMER_CHECK(c.d_ff == 0 || c.d_ff == 4 * c.d_model,
                 "%sd_ff: gpt2's MLP is 4*d_model=%d wide (leave it 0), found %d", p.c_str(),
                 4 * c.d_model, c.d_ff);
  GOSSAMER_CHECK(c.rope_theta == ModelConfig{}.rope_theta,
                 "%srope_theta: gpt2 has no rotary embedding (leave it out), found %g", p.c_str(),
                 c.rope_theta);
  GOSSAMER_CHECK(c.norm_eps == ModelConfig{}.norm_eps,
                 "%snorm_eps: gpt2's LayerNorm epsilon is fixed at 1e-5 (leave it out), found %g",
                 p.c_str(), c.norm_eps);
}

Gpt2::Gpt2(const ModelConfig& config, int max_batch, int max_seq, const kernels::OpTable& ops,
           kernels::MatmulDtype matmul_dtype)
    : DecoderModel(config, ModelFamily::MODEL_FAMILY_GPT2, max_batch, max_seq, ops, matmul_dtype) {
  NH_ = cfg_.n_head;
  build_layout();
  allocate_parameters();
  reserve_linear({{C_, 3 * C_}, {C_, C_}, {C_, 4 * C_}, {4 * C_, C_}, {C_, Vp_}});

  Buffer<float>* activations[] = {&encoded_,   &ln1_,       &ln1_mean_,   &ln1_rstd_,  &qkv_,
                                  &atty_,      &att_saved_, &residual2_,  &ln2_,       &ln2_mean_,
                                  &ln2_rstd_,  &fch_,       &fch_gelu_,   &residual3_, &lnf_,
                                  &lnf_mean_,  &lnf_rstd_,  &dresidual_,  &dbt_c_,     &dqkv_,
                                  &dfch_gelu_, &dfch_,      &att_scratch_};
  allocate_activations(activations, activation_sizes(cfg_, max_B_, max_T_, ops_));
}

size_t Gpt2::parameter_count(const ModelConfig& c) {
  const size_t C = c.d_model, F = c.d_ff_resolved(), L = c.n_layer;
  const size_t block = 4 * C + (3 * C * C + 3 * C) + (C * C + C) + (F * C + F) + (C * F + C);
  return 2 * C + L * block + size_t(c.max_seq_len) * C + size_t(c.padded_vocab_resolved()) * C;
}

std::vector<size_t> Gpt2::activation_sizes(const ModelConfig& c, int max_batch, int max_seq,
                                           const kernels::OpTable& ops) {
  const size_t BT = size_t(max_batch) * max_seq, C = c.d_model, L = c.n_layer;
  const size_t saved = ops.attention_saved_size(max_batch, max_seq, c.n_head);
  return {BT * C,
          L * BT * C,
          L * BT,
          L * BT,
          L * BT * 3 * C,
          L * BT * C,
          L * saved,
          L * BT * C,
          L * BT * C,
          L * BT,
          L * BT,
          L * BT * 4 * C,
          L * BT * 4 * C,
          L * BT * C,
          BT * C,
          BT,
          BT,
          BT * C,
          BT * C,
          BT * 3 * C,
          BT * 4 * C,
          BT * 4 * C,
          ops.attention_scratch_size(max_batch, max_seq, c.n_head)};
}

void Gpt2::build_layout() {
  const int64_t C = C_, F = cfg_.d_ff_resolved();
  lnfw_ = layout_.add("ln_f.weight", {C}, K::PARAM_KIND_NORM);
  lnfb_ = layout_.add("ln_f.bias", {C}, K::PARAM_KIND_NORM);
  layers_.resize(L_);
  layout_blocks([&](int l, const std::string& p) {
    LayerOffsets& o = layers_[l];
    o.fcprojw = layout_.add(p + "mlp.proj.weight", {C, F}, K::PARAM_KIND_WEIGHT);
    o.fcprojb = layout_.add(p + "mlp.proj.bias", {C}, K::PARAM_KIND_BIAS);
    o.fcw = layout_.add(p + "mlp.fc.weight", {F, C}, K::PARAM_KIND_WEIGHT);
    o.fcb = layout_.add(p + "mlp.fc.bias", {F}, K::PARAM_KIND_BIAS);
    o.ln2w = layout_.add(p + "ln2.weight", {C}, K::PARAM_KIND_NORM);
    o.ln2b = layout_.add(p + "ln2.bias", {C}, K::PARAM_KIND_NORM);
    o.attprojw = layout_.add(p + "attn.proj.weight", {C, C}, K::PARAM_KIND_WEIGHT);
    o.attprojb = layout_.add(p + "attn.proj.bias", {C}, K::PARAM_KIND_BIAS);
    o.qkvw = layout_.add(p + "attn.qkv.weight", {3 * C, C}, K::PARAM_KIND_WEIGHT);
    o.qkvb = layout_.add(p + "attn.qkv.bias", {3 * C}, K::PARAM_KIND_BIAS);
    o.ln1w = layout_.add(p + "ln1.weight", {C}, K::PARAM_KIND_NORM);
    o.ln1b = layout_.add(p + "ln1.bias", {C}, K::PARAM_KIND_NORM);
  });
  wpe_ = layout_.add("wpe", {cfg_.max_seq_len, C}, K::PARAM_KIND_EMBEDDING);
  wte_ = layout_.add("wte", {Vp_, C}, K::PARAM_KIND_EMBEDDING);
  lm_head_w_ = wte_;  // tied
}

const float* Gpt2::forward_hidden(int B, int T) {
  const int N = B * T;
  const size_t C = C_, BTC = size_t(N) * C, BT = N;
  const size_t saved_stride = ops_.attention_saved_size(B, T, NH_);
  const float* p = params_.data();
  ops_.encoder_forward(encoded_.data(), tokens_.data(), p + wte_, p + wpe_, B, T, C_);

  for (int l = 0; l < L_; ++l) {
    const LayerOffsets& o = layers_[l];
    const float* residual = l == 0 ? encoded_.data() : residual3_.data() + (l - 1) * BTC;
    float* ln1 = ln1_.data() + l * BTC;
    float* qkv = qkv_.data() + l * 3 * BTC;
    float* atty = atty_.data() + l * BTC;
    float* att_saved = att_saved_.data() + l * saved_stride;
    float* residual2 = residual2_.data() + l * BTC;
    float* ln2 = ln2_.data() + l * BTC;
    float* fch = fch_.data() + l * 4 * BTC;
    float* fch_gelu = fch_gelu_.data() + l * 4 * BTC;
    float* residual3 = residual3_.data() + l * BTC;

    ops_.layernorm_forward(ln1, ln1_mean_.data() + l * BT, ln1_rstd_.data() + l * BT, residual,
                           p + o.ln1w, p + o.ln1b, N, C_);
    linear_forward(qkv, ln1, o.qkvw, p + o.qkvb, N, C_, 3 * C_);
    ops_.attention_forward(atty, att_saved, qkv, B, T, C_, NH_, NH_);
    count_attention(B, T, C_, false);
    linear_forward(residual2, atty, o.attprojw, p + o.attprojb, N, C_, C_);
    ops_.accumulate(residual2, residual, BTC);
    ops_.layernorm_forward(ln2, ln2_mean_.data() + l * BT, ln2_rstd_.data() + l * BT, residual2,
                           p + o.ln2w, p + o.ln2b, N, C_);
    linear_forward(fch, ln2, o.fcw, p + o.fcb, N, C_, 4 * C_);
    ops_.gelu_forward(fch_gelu, fch, 4 * BTC);
    linear_forward(residual3, fch_gelu, o.fcprojw, p + o.fcprojb, N, 4 * C_, C_);
    ops_.accumulate(residual3, residual2, BTC);
  }
  const float* last = residual3_.data() + (L_ - 1) * BTC;
  ops_.layernorm_forward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), last, p + lnfw_,
                         p + lnfb_, N, C_);
  return lnf_.data();
}

void Gpt2::backward_from_hidden(const float* dlnf, const GradReadyHook& hook) {
  const int B = B_, T = T_, N = B * T;
  const size_t C = C_, BTC = size_t(N) * C, BT = N;
  const size_t saved_stride = ops_.attention_saved_size(B, T, NH_);
  const float* p = params_.data();
  float* g = grads_.data();

  // Final LayerNorm (the LM head, tied to wte, is DecoderModel's).
  float* dres = dresidual_.data();
  zero(dres, BTC);
  ops_.layernorm_backward(dres, g + lnfw_, g + lnfb_, dlnf, residual3_.data() + (L_ - 1) * BTC,
                          p + lnfw_, lnf_mean_.data(), lnf_rstd_.data(), N, C_);
  head_ready(hook);

  for (int l = L_ - 1; l >= 0; --l) {
    const LayerOffsets& o = layers_[l];
    const float* residual = l == 0 ? encoded_.data() : residual3_.data() + (l - 1) * BTC;
    const float* ln1 = ln1_.data() + l * BTC;
    const float* qkv = qkv_.data() + l * 3 * BTC;
    const float* atty = atty_.data() + l * BTC;
    const float* att_saved = att_saved_.data() + l * saved_stride;
    const float* residual2 = residual2_.data() + l * BTC;
    const float* ln2 = ln2_.data() + l * BTC;
    const float* fch = fch_.data() + l * 4 * BTC;
    const float* fch_gelu = fch_gelu_.data() + l * 4 * BTC;

    // residual3 = residual2 + mlp(ln2(residual2)); dres is d(residual3) and becomes d(residual2).
    zero(dfch_gelu_.data(), 4 * BTC);
    linear_backward(dfch_gelu_.data(), weight_grad(o.fcprojw, 4 * C * C), g + o.fcprojb, dres,
                    fch_gelu, o.fcprojw, N, 4 * C_, C_);
    routed_done();
    zero(dfch_.data(), 4 * BTC);
    ops_.gelu_backward(dfch_.data(), fch, dfch_gelu_.data(), 4 * BTC);
    float* dln2 = dbt_c_.data();
    zero(dln2, BTC);
    linear_backward(dln2, weight_grad(o.fcw, 4 * C * C), g + o.fcb, dfch_.data(), ln2, o.fcw, N, C_,
                    4 * C_);
    routed_done();
    ops_.layernorm_backward(dres, g + o.ln2w, g + o.ln2b, dln2, residual2, p + o.ln2w,
                            ln2_mean_.data() + l * BT, ln2_rstd_.data() + l * BT, N, C_);

    // residual2 = residual + attn(ln1(residual)); dres becomes d(residual).
    float* datty = dbt_c_.data();
    zero(datty, BTC);
    linear_backward(datty, weight_grad(o.attprojw, C * C), g + o.attprojb, dres, atty, o.attprojw,
                    N, C_, C_);
    routed_done();
    zero(dqkv_.data(), 3 * BTC);
    ops_.attention_backward(dqkv_.data(), att_scratch_.data(), datty, qkv, atty, att_saved, B, T,
                            C_, NH_, NH_);
    count_attention(B, T, C_, true);
    float* dln1 = dbt_c_.data();
    zero(dln1, BTC);
    linear_backward(dln1, weight_grad(o.qkvw, 3 * C * C), g + o.qkvb, dqkv_.data(), ln1, o.qkvw, N,
                    C_, 3 * C_);
    routed_done();
    ops_.layernorm_backward(dres, g + o.ln1w, g + o.ln1b, dln1, residual, p + o.ln1w,
                            ln1_mean_.data() + l * BT, ln1_rstd_.data() + l * BT, N, C_);
    block_ready(hook, l);
  }
  ops_.encoder_backward(g + wte_, g + wpe_, dres, tokens_.data(), B, T, C_);
  embeddings_ready(hook);
}

}  // namespace gossamer::model
