// Whole-model check of Gpt2 against an independent PyTorch float64 reference
// (scripts/make_golden_gpt2.py -> tests/assets/gpt2_golden.safetensors): logits, loss, the
// gradient of every parameter, and a 10-step AdamW loss trajectory with clipping. Also checks
// the layout invariants (backward order, hook ranges) and bitwise determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/gpt2.h"
#include "optim/optimizer.h"
#include "optim/registry.h"

using namespace gossamer;

namespace {

std::string golden_path() {
  const char* dir = std::getenv("GOSSAMER_TEST_ASSETS");
  return std::string(dir ? dir : GOSSAMER_SOURCE_DIR "/tests/assets") + "/gpt2_golden.safetensors";
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
    cfg.n_layer = meta_int(reader, "n_layer");
    cfg.n_head = meta_int(reader, "n_head");
    cfg.d_model = meta_int(reader, "d_model");
    cfg.vocab_size = meta_int(reader, "vocab_size");
    cfg.padded_vocab = meta_int(reader, "padded_vocab");
    cfg.max_seq_len = meta_int(reader, "max_seq_len");
    B = meta_int(reader, "B");
    T = meta_int(reader, "T");
    tokens = reader.read_as<int32_t>("tokens", {B, T});
    targets = reader.read_as<int32_t>("targets", {B, T});
  }

  void load_params(model::Gpt2& m) const {
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

}  // namespace

TEST(Gpt2Golden, LogitsLossAndEveryGradientMatchPyTorch) {
  Golden g;
  model::Gpt2 m(g.cfg, g.B, g.T, kernels::cpu_ops());
  g.load_params(m);

  m.forward(g.tokens.data(), nullptr, g.B, g.T);
  const auto ref_logits = g.reader.read_as<double>("logits");
  const int V = g.cfg.vocab_size, Vp = g.cfg.padded_vocab_resolved();
  std::vector<float> ours(size_t(g.B) * g.T * V);
  for (int i = 0; i < g.B * g.T; ++i)
    for (int j = 0; j < V; ++j) ours[size_t(i) * V + j] = m.logits()[size_t(i) * Vp + j];
  // fp32 forward vs float64 reference over 2 layers: errors of a few ulps of the logit scale.
  EXPECT_LT(rel_max_err(ours.data(), ref_logits), 2e-5);

  const float loss = m.forward(g.tokens.data(), g.targets.data(), g.B, g.T);
  const double ref_loss = g.reader.read_as<double>("loss")[0];
  EXPECT_NEAR(loss, ref_loss, 2e-5 * std::abs(ref_loss));

  m.zero_grad();
  m.backward(1.0f);
  int checked = 0;
  for (const auto& v : m.layout().views()) {
    const auto ref = g.reader.read_as<double>("grad." + v.name, v.shape);
    // Gradients pass through more fp32 ops (softmax, LayerNorm backward); 1e-4 of each
    // tensor's own scale still catches any wrong term (those give errors of order 1).
    EXPECT_LT(rel_max_err(m.grads().data() + v.offset, ref), 1e-4) << v.name;
    ++checked;
  }
  EXPECT_EQ(checked, 4 + 12 * g.cfg.n_layer);
}

TEST(Gpt2Golden, TenStepAdamWTrajectoryMatchesPyTorch) {
  Golden g;
  model::Gpt2 m(g.cfg, g.B, g.T, kernels::cpu_ops());
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
  ASSERT_EQ(ref.size(), 10u);
  for (size_t step = 0; step < ref.size(); ++step) {
    const float loss = m.forward(g.tokens.data(), g.targets.data(), g.B, g.T);
    EXPECT_NEAR(loss, ref[step], 1e-4) << "step " << step;
    m.zero_grad();
    m.backward(1.0f);
    opt->step({int64_t(step) + 1, oc.lr});
  }
  EXPECT_LT(ref.back(), ref.front() - 0.1) << "the reference itself must learn";
}

TEST(Gpt2Layout, BackwardOrderAndHookRangesCoverTheBufferAsAPrefix) {
  model::ModelConfig cfg;
  cfg.n_layer = 3, cfg.n_head = 2, cfg.d_model = 8, cfg.vocab_size = 50, cfg.max_seq_len = 8;
  model::Gpt2 m(cfg, 2, 5, kernels::cpu_ops());
  const auto& views = m.layout().views();
  EXPECT_EQ(views.front().name, "ln_f.weight");
  EXPECT_EQ(views.back().name, "wte");
  EXPECT_EQ(m.layout().find("blocks.2.mlp.proj.weight").offset <
                m.layout().find("blocks.0.ln1.bias").offset,
            true);
  m.init_weights(1);
  std::vector<int32_t> tok(10), tgt(10);
  for (int i = 0; i < 10; ++i) tok[i] = i * 3 % 50, tgt[i] = (i * 7 + 1) % 50;
  m.forward(tok.data(), tgt.data(), 2, 5);
  m.zero_grad();
  size_t covered = 0;
  int calls = 0;
  m.backward(1.0f, [&](size_t begin, size_t end) {
    EXPECT_EQ(begin, covered) << "ranges must form a growing prefix";
    EXPECT_GT(end, begin);
    covered = end;
    ++calls;
  });
  EXPECT_EQ(covered, m.layout().total());
  EXPECT_EQ(calls, 1 + cfg.n_layer + 1);
}

TEST(Gpt2Determinism, TwoIdenticalRunsGiveIdenticalBits) {
  model::ModelConfig cfg;
  cfg.n_layer = 2, cfg.n_head = 4, cfg.d_model = 32, cfg.vocab_size = 300, cfg.max_seq_len = 16;
  auto run = [&]() {
    model::Gpt2 m(cfg, 3, 16, kernels::cpu_ops());
    m.init_weights(7);
    auto opt = optim::make_optimizer({}, m.layout(), kernels::cpu_ops());
    opt->attach(m.params(), m.grads());
    std::vector<int32_t> tok(48), tgt(48);
    for (int i = 0; i < 48; ++i) tok[i] = (i * 31) % 300, tgt[i] = (i * 17 + 5) % 300;
    for (int s = 0; s < 3; ++s) {
      m.forward(tok.data(), tgt.data(), 3, 16);
      m.zero_grad();
      m.backward(1.0f);
      opt->step({s + 1, 1e-3});
    }
    return std::vector<float>(m.params().begin(), m.params().end());
  };
  const auto a = run(), b = run();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(Gpt2Init, PaddedRowsAreZeroAndStatisticsMatchTheConfig) {
  model::ModelConfig cfg;
  cfg.n_layer = 2, cfg.n_head = 2, cfg.d_model = 64, cfg.vocab_size = 1000, cfg.max_seq_len = 32;
  model::Gpt2 m(cfg, 1, 8, kernels::cpu_ops());
  m.init_weights(3);
  const auto& wte = m.layout().find("wte");
  const float* p = m.params().data() + wte.offset;
  for (size_t i = size_t(cfg.vocab_size) * cfg.d_model; i < wte.numel; ++i) ASSERT_EQ(p[i], 0.0f);
  double s2 = 0;
  const size_t n = size_t(cfg.vocab_size) * cfg.d_model;
  for (size_t i = 0; i < n; ++i) s2 += double(p[i]) * p[i];
  EXPECT_NEAR(std::sqrt(s2 / n), cfg.init_std, 0.002);
  const auto& proj = m.layout().find("blocks.0.attn.proj.weight");
  s2 = 0;
  for (size_t i = 0; i < proj.numel; ++i)
    s2 += double(m.params()[proj.offset + i]) * m.params()[proj.offset + i];
  EXPECT_NEAR(std::sqrt(s2 / proj.numel), cfg.init_std / std::sqrt(4.0), 0.002);
  EXPECT_EQ(m.params()[m.layout().find("blocks.1.ln2.weight").offset], 1.0f);
}

TEST(Gpt2Errors, OutOfRangeTokensAndShapesAreRejected) {
  model::ModelConfig cfg;
  cfg.n_layer = 1, cfg.n_head = 1, cfg.d_model = 8, cfg.vocab_size = 10, cfg.max_seq_len = 4;
  model::Gpt2 m(cfg, 1, 4, kernels::cpu_ops());
  std::vector<int32_t> tok = {1, 2, 10, 3}, tgt = {1, 1, 1, 1};
  EXPECT_THROW(m.forward(tok.data(), tgt.data(), 1, 4), Error);
  tok[2] = 3;
  EXPECT_THROW(m.forward(tok.data(), tgt.data(), 2, 4), Error);
  EXPECT_THROW(model::Gpt2(cfg, 1, 5, kernels::cpu_ops()), Error);
  EXPECT_THROW(m.backward(1.0f), Error);  // no forward with targets yet
}

TEST(Gpt2Accumulation, TwoHalfBatchesWithHalfScaleEqualOneFullBatch) {
  model::ModelConfig cfg;
  cfg.n_layer = 2, cfg.n_head = 2, cfg.d_model = 16, cfg.vocab_size = 97, cfg.max_seq_len = 8;
  model::Gpt2 full(cfg, 4, 8, kernels::cpu_ops()), half(cfg, 2, 8, kernels::cpu_ops());
  full.init_weights(11);
  half.init_weights(11);
  std::vector<int32_t> tok(32), tgt(32);
  for (int i = 0; i < 32; ++i) tok[i] = (i * 13) % 97, tgt[i] = (i * 29 + 3) % 97;
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
