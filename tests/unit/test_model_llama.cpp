// Whole-model check of Llama against an independent PyTorch float64 reference
// (scripts/make_golden_llama.py -> tests/assets/llama_golden.safetensors, written from Hugging
// Face LlamaForCausalLM's semantics: rotate_half RoPE with a non-default theta, grouped-query
// attention, SwiGLU, RMSNorm, untied head): logits, loss, the gradient of every parameter, and
// a 10-step AdamW loss trajectory with clipping. Also checks the parameter layout (names,
// shapes, kinds, backward order, adjacency of q/k/v and gate/up), hook ranges, bitwise
// determinism, initialisation statistics, gradient accumulation and error cases.
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
#include "optim/optimizer.h"
#include "optim/registry.h"

using namespace gossamer;

namespace {

std::string golden_path() {
  const char* dir = std::getenv("GOSSAMER_TEST_ASSETS");
  return std::string(dir ? dir : GOSSAMER_SOURCE_DIR "/tests/assets") + "/llama_golden.safetensors";
}

int meta_int(const io::SafetensorsReader& r, const char* key) {
  return std::stoi(r.metadata(key));
}
double meta_double(const io::SafetensorsReader& r, const char* key) {
  return std::stod(r.metadata(key));
}

struct Golden {
  io::SafetensorsReader reader{golden_path()};
  model::ModelConfig cfg;
  int B = 0, T = 0;
  std::vector<int32_t> tokens, targets;

  Golden() {
    cfg.family = "llama";
    cfg.n_layer = meta_int(reader, "n_layer");
    cfg.n_head = meta_int(reader, "n_head");
    cfg.n_kv_head = meta_int(reader, "n_kv_head");
    cfg.d_model = meta_int(reader, "d_model");
    cfg.d_ff = meta_int(reader, "d_ff");
    cfg.vocab_size = meta_int(reader, "vocab_size");
    cfg.padded_vocab = meta_int(reader, "padded_vocab");
    cfg.max_seq_len = meta_int(reader, "max_seq_len");
    cfg.rope_theta = meta_double(reader, "rope_theta");
    cfg.norm_eps = meta_double(reader, "norm_eps");
    B = meta_int(reader, "B");
    T = meta_int(reader, "T");
    tokens = reader.read_as<int32_t>("tokens", {B, T});
    targets = reader.read_as<int32_t>("targets", {B, T});
  }

  void load_params(model::Llama& m) const {
    for (const auto& v : m.layout().views()) {
      auto x = reader.read_as<float>("param." + v.name, v.shape);
      std::copy(x.begin(), x.end(), m.params().data() + v.offset);
    }
  }
};

// max |a - b| / max |b|: the error relative to the tensor's scale.
double rel_max_err(const float* a, const std::vector<double>& b) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_FALSE(std::isnan(a[i])) << "NaN at " << i;
    num = std::max(num, std::abs(double(a[i]) - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  return num / den;
}

model::ModelConfig small_config() {
  model::ModelConfig cfg;
  cfg.family = "llama";
  cfg.n_layer = 2, cfg.n_head = 4, cfg.n_kv_head = 2, cfg.d_model = 32, cfg.d_ff = 40;
  cfg.vocab_size = 300, cfg.max_seq_len = 16;
  return cfg;
}

}  // namespace

TEST(LlamaGolden, ConfigIsTheIntendedOne) {
  Golden g;
  // The golden file exercises grouped-query attention, an explicit d_ff, padding and a
  // non-default RoPE base (a kernel ignoring theta would fail the logits check).
  EXPECT_LT(g.cfg.n_kv_head, g.cfg.n_head);
  EXPECT_NE(g.cfg.rope_theta, model::ModelConfig{}.rope_theta);
  EXPECT_GT(g.cfg.padded_vocab, g.cfg.vocab_size);
  EXPECT_EQ(g.reader.metadata("rope"), "rotate_half");
}

TEST(LlamaGolden, LogitsLossAndEveryGradientMatchPyTorch) {
  Golden g;
  model::Llama m(g.cfg, g.B, g.T, kernels::cpu_ops());
  g.load_params(m);

  m.forward(g.tokens.data(), nullptr, g.B, g.T);
  const auto ref_logits = g.reader.read_as<double>("logits");
  const int V = g.cfg.vocab_size, Vp = g.cfg.padded_vocab_resolved();
  std::vector<float> ours(size_t(g.B) * g.T * V);
  for (int i = 0; i < g.B * g.T; ++i)
    for (int j = 0; j < V; ++j) ours[size_t(i) * V + j] = m.logits()[size_t(i) * Vp + j];
  // fp32 forward vs float64 reference over 2 layers: errors of a few ulps of the logit scale
  // (the reference's own float32 run differs by ~7e-7 of a max logit ~0.5, i.e. ~1.5e-6).
  EXPECT_LT(rel_max_err(ours.data(), ref_logits), 2e-5);
  // Padded logits columns: the padded lm_head rows are zero.
  for (int i = 0; i < g.B * g.T; ++i)
    for (int j = V; j < Vp; ++j) ASSERT_EQ(m.logits()[size_t(i) * Vp + j], 0.0f);

  const float loss = m.forward(g.tokens.data(), g.targets.data(), g.B, g.T);
  const double ref_loss = g.reader.read_as<double>("loss")[0];
  EXPECT_NEAR(loss, ref_loss, 2e-5 * std::abs(ref_loss));

  m.zero_grad();
  m.backward(1.0f);
  int checked = 0;
  for (const auto& v : m.layout().views()) {
    const auto ref = g.reader.read_as<double>("grad." + v.name, v.shape);
    // Gradients pass through more fp32 ops (softmax, RMSNorm backward); 1e-4 of each tensor's
    // own scale still catches any wrong term (those give errors of order 1).
    EXPECT_LT(rel_max_err(m.grads().data() + v.offset, ref), 1e-4) << v.name;
    ++checked;
  }
  EXPECT_EQ(checked, 3 + 9 * g.cfg.n_layer);
}

TEST(LlamaGolden, TenStepAdamWTrajectoryMatchesPyTorch) {
  Golden g;
  model::Llama m(g.cfg, g.B, g.T, kernels::cpu_ops());
  g.load_params(m);
  optim::OptimizerConfig oc;
  oc.lr = meta_double(g.reader, "lr");
  oc.beta1 = meta_double(g.reader, "beta1");
  oc.beta2 = meta_double(g.reader, "beta2");
  oc.eps = meta_double(g.reader, "eps");
  oc.weight_decay = meta_double(g.reader, "weight_decay");
  oc.grad_clip = meta_double(g.reader, "grad_clip");  // the optimizer clips by the global norm
  auto opt = optim::make_optimizer(oc, m.layout(), kernels::cpu_ops());
  opt->attach(m.params(), m.grads());
  const auto ref = g.reader.read_as<double>("losses");
  const auto ref_norms = g.reader.read_as<double>("grad_norms");
  ASSERT_EQ(ref.size(), 10u);
  for (size_t step = 0; step < ref.size(); ++step) {
    const float loss = m.forward(g.tokens.data(), g.targets.data(), g.B, g.T);
    EXPECT_NEAR(loss, ref[step], 1e-4) << "step " << step;
    m.zero_grad();
    m.backward(1.0f);
    const double norm = opt->step({int64_t(step) + 1, oc.lr}).grad_norm;
    EXPECT_NEAR(norm, ref_norms[step], 1e-4 * ref_norms[step]) << "step " << step;
  }
  EXPECT_LT(ref.back(), ref.front() - 0.1) << "the reference itself must learn";
  // Padded rows of both vocabulary tables stay zero through training.
  for (const char* name : {"wte", "lm_head.weight"}) {
    const auto& v = m.layout().find(name);
    for (size_t i = size_t(g.cfg.vocab_size) * g.cfg.d_model; i < v.numel; ++i)
      ASSERT_EQ(m.params()[v.offset + i], 0.0f) << name << " element " << i;
  }
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

TEST(LlamaLayout, HookRangesCoverTheBufferAsAPrefix) {
  model::ModelConfig cfg = small_config();
  cfg.n_layer = 3;
  model::Llama m(cfg, 2, 5, kernels::cpu_ops());
  m.init_weights(1);
  std::vector<int32_t> tok(10), tgt(10);
  for (int i = 0; i < 10; ++i) tok[i] = i * 3 % 300, tgt[i] = (i * 7 + 1) % 300;
  m.forward(tok.data(), tgt.data(), 2, 5);
  m.zero_grad();
  std::vector<std::pair<size_t, size_t>> ranges;
  m.backward(1.0f, [&](size_t begin, size_t end) { ranges.emplace_back(begin, end); });
  ASSERT_EQ(ranges.size(), size_t(1 + cfg.n_layer + 1));
  size_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    EXPECT_EQ(begin, covered) << "ranges must form a growing prefix";
    EXPECT_GT(end, begin);
    covered = end;
  }
  EXPECT_EQ(covered, m.layout().total());
  // The first range is lm_head + norm_f, each block one range (last block first), wte last.
  EXPECT_EQ(ranges[0].second, m.layout().find("blocks.2.mlp.down.weight").offset);
  EXPECT_EQ(ranges[1].first, m.layout().find("blocks.2.mlp.down.weight").offset);
  EXPECT_EQ(ranges[1].second, m.layout().find("blocks.1.mlp.down.weight").offset);
  EXPECT_EQ(ranges.back().first, m.layout().find("wte").offset);
}

TEST(LlamaDeterminism, TwoIdenticalRunsGiveIdenticalBits) {
  const model::ModelConfig cfg = small_config();
  auto run = [&]() {
    auto m = model::make_model(cfg, 3, 16, kernels::cpu_ops());
    m->init_weights(7);
    auto opt = optim::make_optimizer({}, m->layout(), kernels::cpu_ops());
    opt->attach(m->params(), m->grads());
    std::vector<int32_t> tok(48), tgt(48);
    for (int i = 0; i < 48; ++i) tok[i] = (i * 31) % 300, tgt[i] = (i * 17 + 5) % 300;
    for (int s = 0; s < 3; ++s) {
      m->forward(tok.data(), tgt.data(), 3, 16);
      m->zero_grad();
      m->backward(1.0f);
      opt->step({s + 1, 1e-3});
    }
    return std::vector<float>(m->params().begin(), m->params().end());
  };
  const auto a = run(), b = run();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(LlamaInit, PaddedRowsAreZeroAndStatisticsMatchTheConfig) {
  model::ModelConfig cfg;
  cfg.family = "llama";
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

TEST(LlamaErrors, BadConfigsTokensAndShapesAreRejected) {
  model::ModelConfig cfg = small_config();
  cfg.n_layer = 1, cfg.max_seq_len = 4;
  model::Llama m(cfg, 1, 4, kernels::cpu_ops());
  std::vector<int32_t> tok = {1, 2, 300, 3}, tgt = {1, 1, 1, 1};
  EXPECT_THROW(m.forward(tok.data(), tgt.data(), 1, 4), Error);
  tok[2] = 3;
  tgt[1] = -1;
  EXPECT_THROW(m.forward(tok.data(), tgt.data(), 1, 4), Error);
  tgt[1] = 1;
  EXPECT_THROW(m.forward(tok.data(), tgt.data(), 2, 4), Error);
  EXPECT_THROW(model::Llama(cfg, 1, 5, kernels::cpu_ops()), Error);
  EXPECT_THROW(m.backward(1.0f), Error);  // no forward with targets yet
  m.forward(tok.data(), nullptr, 1, 4);
  EXPECT_THROW(m.backward(1.0f), Error);  // a forward without targets does not prepare it

  model::ModelConfig odd = small_config();
  odd.d_model = 36, odd.n_head = 4, odd.n_kv_head = 2;  // head size 9: RoPE needs it even
  EXPECT_THROW(model::make_model(odd, 1, 4, kernels::cpu_ops()), Error);
  model::ModelConfig kv = small_config();
  kv.n_kv_head = 3;  // does not divide n_head = 4
  EXPECT_THROW(model::make_model(kv, 1, 4, kernels::cpu_ops()), Error);
  model::ModelConfig gpt2 = small_config();
  gpt2.family = "gpt2";
  EXPECT_THROW(model::Llama(gpt2, 1, 4, kernels::cpu_ops()), Error);
  // The factory builds a Llama for family "llama".
  auto built = model::make_model(small_config(), 1, 4, kernels::cpu_ops());
  EXPECT_NE(dynamic_cast<model::Llama*>(built.get()), nullptr);
}

TEST(LlamaAccumulation, TwoHalfBatchesWithHalfScaleEqualOneFullBatch) {
  const model::ModelConfig cfg = small_config();
  model::Llama full(cfg, 4, 8, kernels::cpu_ops()), half(cfg, 2, 8, kernels::cpu_ops());
  full.init_weights(11);
  half.init_weights(11);
  std::vector<int32_t> tok(32), tgt(32);
  for (int i = 0; i < 32; ++i) tok[i] = (i * 13) % 300, tgt[i] = (i * 29 + 3) % 300;
  const float loss_full = full.forward(tok.data(), tgt.data(), 4, 8);
  full.zero_grad();
  full.backward(1.0f);
  half.zero_grad();
  double loss_half = 0;
  for (int part = 0; part < 2; ++part) {
    loss_half += 0.5 * half.forward(tok.data() + part * 16, tgt.data() + part * 16, 2, 8);
    half.backward(0.5f);
  }
  EXPECT_NEAR(loss_full, loss_half, 1e-5);
  double num = 0, den = 0;
  for (size_t i = 0; i < full.grads().size(); ++i) {
    num = std::max(num, double(std::abs(full.grads()[i] - half.grads()[i])));
    den = std::max(den, double(std::abs(full.grads()[i])));
  }
  EXPECT_LT(num / den, 1e-5) << "gradient accumulation must add, not overwrite";
}
