// Llama-specific checks: the golden reference's config exercises what sets Llama apart
// (grouped-query attention, an explicit d_ff, padding, a non-default RoPE base), the parameter
// layout (names, shapes, kinds, backward order, adjacency of q/k/v and gate/up), the
// initialisation, order-awareness through RoPE alone, and the configs Llama rejects. The checks
// every family shares (the golden PyTorch reference, made from Hugging Face LlamaForCausalLM's
// semantics; hook ranges, determinism, accumulation, rejected inputs) are in
// test_model_golden.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/llama.h"

using namespace gossamer;

namespace {

model::ModelConfig small_config() {
  model::ModelConfig cfg;
  cfg.family = model::ModelFamily::MODEL_FAMILY_LLAMA;
  cfg.n_layer = 2, cfg.n_head = 4, cfg.n_kv_head = 2, cfg.d_model = 32, cfg.d_ff = 40;
  cfg.vocab_size = 300, cfg.max_seq_len = 16;
  return cfg;
}

}  // namespace

TEST(LlamaGolden, ConfigIsTheIntendedOne) {
  const char* dir = std::getenv("GOSSAMER_TEST_ASSETS");
  const io::SafetensorsReader r(std::string(dir ? dir : GOSSAMER_SOURCE_DIR "/tests/assets") +
                                "/llama_golden.safetensors");
  auto meta = [&](const char* key) { return std::stod(r.metadata(key)); };
  // The golden file exercises grouped-query attention, an explicit d_ff, padding and a
  // non-default RoPE base (a kernel ignoring theta would fail the logits check).
  EXPECT_LT(meta("n_kv_head"), meta("n_head"));
  EXPECT_GT(meta("d_ff"), 0);
  EXPECT_NE(meta("rope_theta"), model::ModelConfig{}.rope_theta);
  EXPECT_GT(meta("padded_vocab"), meta("vocab_size"));
  EXPECT_EQ(r.metadata("rope"), "rotate_half");
}

TEST(LlamaLayout, NamesShapesKindsInBackwardOrder) {
  model::ModelConfig cfg = small_config();  // C 32, NH 4 (hs 8), NKV 2, F 40, L 2
  model::Llama m(cfg, 1, 4, kernels::cpu_ops());
  using K = model::ParamKind;
  struct Want {
    std::string name;
    std::vector<int64_t> shape;
    K kind;
  };
  const int64_t Vp = cfg.padded_vocab_resolved();
  std::vector<Want> want = {{"lm_head.weight", {Vp, 32}, K::PARAM_KIND_EMBEDDING},
                            {"norm_f.weight", {32}, K::PARAM_KIND_NORM}};
  for (int l = 1; l >= 0; --l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    for (Want w : std::vector<Want>{{"mlp.down.weight", {32, 40}, K::PARAM_KIND_WEIGHT},
                                    {"mlp.gate.weight", {40, 32}, K::PARAM_KIND_WEIGHT},
                                    {"mlp.up.weight", {40, 32}, K::PARAM_KIND_WEIGHT},
                                    {"mlp_norm.weight", {32}, K::PARAM_KIND_NORM},
                                    {"attn.o.weight", {32, 32}, K::PARAM_KIND_WEIGHT},
                                    {"attn.q.weight", {32, 32}, K::PARAM_KIND_WEIGHT},
                                    {"attn.k.weight", {16, 32}, K::PARAM_KIND_WEIGHT},
                                    {"attn.v.weight", {16, 32}, K::PARAM_KIND_WEIGHT},
                                    {"attn_norm.weight", {32}, K::PARAM_KIND_NORM}}) {
      w.name = p + w.name;
      want.push_back(w);
    }
  }
  want.push_back({"wte", {Vp, 32}, K::PARAM_KIND_EMBEDDING});
  const auto& views = m.layout().views();
  ASSERT_EQ(views.size(), want.size());
  size_t offset = 0;
  for (size_t i = 0; i < views.size(); ++i) {
    const std::string& name = want[i].name;
    EXPECT_EQ(views[i].name, name);
    EXPECT_EQ(views[i].shape, want[i].shape) << name;
    EXPECT_EQ(views[i].kind, want[i].kind) << name;
    EXPECT_EQ(views[i].offset, offset) << name << ": views must be contiguous";
    offset += views[i].numel;
  }
  EXPECT_EQ(offset, m.layout().total());
  // The closed form of docs/MODELS.md: 2 Vp C + C + L (2 C Q + 2 C KV + 3 C F + 2 C), with
  // Q = NH hs = 32, KV = NKV hs = 16, F = 40.
  EXPECT_EQ(m.layout().total(),
            size_t(2 * Vp * 32 + 32 + 2 * (2 * 32 * 32 + 2 * 32 * 16 + 3 * 32 * 40 + 2 * 32)));
  // No biases anywhere; no position embedding.
  for (const auto& v : views) EXPECT_NE(v.kind, K::PARAM_KIND_BIAS) << v.name;
  EXPECT_FALSE(m.layout().contains("wpe"));
}

TEST(LlamaInit, PaddedRowsAreZeroAndStatisticsMatchTheConfig) {
  model::ModelConfig cfg;
  cfg.family = model::ModelFamily::MODEL_FAMILY_LLAMA;
  cfg.n_layer = 2, cfg.n_head = 4, cfg.n_kv_head = 1, cfg.d_model = 64, cfg.vocab_size = 1000;
  cfg.max_seq_len = 32;
  model::Llama m(cfg, 1, 8, kernels::cpu_ops());
  m.init_weights(3);
  auto rms = [&](const std::string& name, size_t n = 0) {
    const auto& v = m.layout().find(name);
    n = n ? n : v.numel;
    double s2 = 0;
    for (size_t i = 0; i < n; ++i)
      s2 += double(m.params()[v.offset + i]) * m.params()[v.offset + i];
    return std::sqrt(s2 / n);
  };
  const size_t real = size_t(cfg.vocab_size) * cfg.d_model;
  for (const char* name : {"wte", "lm_head.weight"}) {
    const auto& v = m.layout().find(name);
    for (size_t i = real; i < v.numel; ++i) ASSERT_EQ(m.params()[v.offset + i], 0.0f) << name;
    EXPECT_NEAR(rms(name, real), cfg.init_std, 0.002) << name;
  }
  for (const char* name : {"blocks.0.attn.q.weight", "blocks.1.attn.k.weight",
                           "blocks.0.mlp.gate.weight", "blocks.1.mlp.up.weight"})
    EXPECT_NEAR(rms(name), cfg.init_std, 0.003) << name;
  for (const char* name : {"blocks.0.attn.o.weight", "blocks.1.mlp.down.weight"})
    EXPECT_NEAR(rms(name), cfg.init_std / std::sqrt(4.0), 0.002) << name;
  for (const auto& v : m.layout().views()) {
    if (v.kind != model::ParamKind::PARAM_KIND_NORM) continue;
    for (size_t i = 0; i < v.numel; ++i) ASSERT_EQ(m.params()[v.offset + i], 1.0f) << v.name;
  }
  // d_ff default: 8/3 * 64 = 170, rounded up to a multiple of 256.
  EXPECT_EQ(m.layout().find("blocks.0.mlp.gate.weight").shape[0], 256);
  // FLOP parameters: everything except wte and the padded lm_head rows.
  const size_t Vp = cfg.padded_vocab_resolved();
  EXPECT_EQ(m.num_flop_params(),
            m.layout().total() - Vp * cfg.d_model - (Vp - cfg.vocab_size) * cfg.d_model);
  // Different seeds give different weights; the same seed the same.
  model::Llama m2(cfg, 1, 8, kernels::cpu_ops());
  m2.init_weights(3);
  EXPECT_EQ(std::memcmp(m.params().data(), m2.params().data(), m.params().size_bytes()), 0);
  m2.init_weights(4);
  EXPECT_NE(std::memcmp(m.params().data(), m2.params().data(), m.params().size_bytes()), 0);
}

TEST(LlamaPositions, TokenOrderMattersThroughRoPE) {
  // No position embedding: only RoPE makes the model order-aware. Swapping two earlier tokens
  // changes the logits at a later position.
  const model::ModelConfig cfg = small_config();
  model::Llama m(cfg, 1, 6, kernels::cpu_ops());
  m.init_weights(5);
  const int Vp = cfg.padded_vocab_resolved();
  std::vector<int32_t> a = {5, 9, 17, 33, 2, 8}, b = {9, 5, 17, 33, 2, 8};
  m.forward(a.data(), nullptr, 1, 6);
  const std::vector<float> la(m.logits() + 5 * Vp, m.logits() + 6 * Vp);
  m.forward(b.data(), nullptr, 1, 6);
  double diff = 0;
  for (int j = 0; j < Vp; ++j)
    diff = std::max(diff, double(std::abs(la[j] - m.logits()[5 * Vp + j])));
  EXPECT_GT(diff, 1e-6);
}

TEST(LlamaErrors, ConfigsLlamaCannotComputeAreRejected) {
  model::ModelConfig odd = small_config();
  odd.d_model = 36, odd.n_head = 4, odd.n_kv_head = 2;  // head size 9: RoPE needs it even
  EXPECT_THROW(model::make_model(odd, 1, 4, kernels::cpu_ops()), Error);
  model::ModelConfig kv = small_config();
  kv.n_kv_head = 3;  // does not divide n_head = 4
  EXPECT_THROW(model::make_model(kv, 1, 4, kernels::cpu_ops()), Error);
  model::ModelConfig gpt2 = small_config();
  gpt2.family = model::ModelFamily::MODEL_FAMILY_GPT2;
  gpt2.n_kv_head = 0, gpt2.d_ff = 0;  // a valid gpt2 config, but not a Llama's
  EXPECT_THROW(model::Llama(gpt2, 1, 4, kernels::cpu_ops()), Error);
  // The factory builds a Llama for family llama.
  auto built = model::make_model(small_config(), 1, 4, kernels::cpu_ops());
  EXPECT_NE(dynamic_cast<model::Llama*>(built.get()), nullptr);
}
