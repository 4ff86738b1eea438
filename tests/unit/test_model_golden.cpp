// What every model family must satisfy, as one value-parameterised test over the families.
// Against the family's independent PyTorch float64 reference (scripts/make_golden.py --family F
// -> tests/assets/F_golden.safetensors): logits, loss, the gradient of every parameter and a
// 10-step AdamW trajectory with clipping (losses and gradient norms). On a small random model:
// backward's hook ranges cover the buffer as a growing prefix (head, one range per block from
// the last, embeddings), bitwise determinism, gradient accumulation, and the rejected inputs.
// Family-specific checks (layout names, initialisation, RoPE, tied embedding) live in
// test_model_gpt2.cpp and test_model_llama.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "optim/registry.h"

using namespace gossamer;

namespace {

using model::ModelFamily;

struct FamilyCase {
  ModelFamily family;
  const char* asset;                      // the golden file, under GOSSAMER_TEST_ASSETS
  int fixed_params, params_per_layer;     // parameter tensors outside / inside each block
  std::vector<std::string> vocab_tables;  // parameters with padded rows (>= vocab_size)
  model::ModelConfig small;               // for the tests on a random model (B 3, T 16)
};

model::ModelConfig small_config(ModelFamily family) {
  model::ModelConfig cfg;
  cfg.family = family;
  cfg.n_layer = 2, cfg.n_head = 4, cfg.d_model = 32, cfg.vocab_size = 300, cfg.max_seq_len = 16;
  if (family == ModelFamily::MODEL_FAMILY_LLAMA) cfg.n_kv_head = 2, cfg.d_ff = 40;
  return cfg;
}

const FamilyCase kCases[] = {
    {.family = ModelFamily::MODEL_FAMILY_GPT2,
     .asset = "gpt2_golden.safetensors",
     .fixed_params = 4,  // ln_f.{weight,bias}, wpe, wte
     .params_per_layer = 12,
     .vocab_tables = {"wte"},
     .small = small_config(ModelFamily::MODEL_FAMILY_GPT2)},
    {.family = ModelFamily::MODEL_FAMILY_LLAMA,
     .asset = "llama_golden.safetensors",
     .fixed_params = 3,  // lm_head, norm_f, wte
     .params_per_layer = 9,
     .vocab_tables = {"wte", "lm_head.weight"},
     .small = small_config(ModelFamily::MODEL_FAMILY_LLAMA)},
};

struct Batch {
  int B = 0, T = 0;
  std::vector<int32_t> tokens, targets;
};

// A deterministic batch of in-range tokens and targets.
Batch make_batch(int B, int T, int vocab) {
  Batch b{B, T, std::vector<int32_t>(size_t(B) * T), std::vector<int32_t>(size_t(B) * T)};
  for (int i = 0; i < B * T; ++i)
    b.tokens[i] = (i * 31) % vocab, b.targets[i] = (i * 17 + 5) % vocab;
  return b;
}

struct AdamWSettings {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1, grad_clip = 1.0;
};
struct TrajectoryStep {
  float loss;        // before the step
  double grad_norm;  // global gradient norm, before clipping
};

// Every use of the optimizer API in this file: `steps` AdamW updates of m on one batch (forward
// with targets, zero_grad, backward, step), global-norm clipping as `hp` says.
std::vector<TrajectoryStep> run_adamw_trajectory(model::Model& m, const AdamWSettings& hp,
                                                 const Batch& batch, int steps) {
  optim::OptimizerConfig oc;
  oc.name = "adamw";
  oc.lr = hp.lr, oc.beta1 = hp.beta1, oc.beta2 = hp.beta2, oc.eps = hp.eps;
  oc.weight_decay = hp.weight_decay, oc.grad_clip = hp.grad_clip;
  auto opt = optim::make_optimizer(oc, m.layout(), kernels::cpu_ops());
  opt->attach(m.params(), m.grads());
  std::vector<TrajectoryStep> out;
  for (int step = 0; step < steps; ++step) {
    const float loss = m.forward(batch.tokens.data(), batch.targets.data(), batch.B, batch.T);
    m.zero_grad();
    m.backward(1.0f);
    const double norm = opt->step({int64_t(step) + 1, oc.lr}).grad_norm;
    out.push_back({loss, norm});
  }
  return out;
}

std::string asset_path(const char* name) {
  const char* dir = std::getenv("GOSSAMER_TEST_ASSETS");
  return std::string(dir ? dir : GOSSAMER_SOURCE_DIR "/tests/assets") + "/" + name;
}

// The reference of one family: config, batch and initial parameters, as the script wrote them.
struct Golden {
  io::SafetensorsReader reader;
  model::ModelConfig cfg;
  Batch batch;

  explicit Golden(const FamilyCase& c) : reader(asset_path(c.asset)) {
    auto has = [&](const char* key) { return reader.metadata().count(key) != 0; };
    auto num = [&](const char* key) { return std::stod(reader.metadata(key)); };
    auto integer = [&](const char* key) { return std::stoi(reader.metadata(key)); };
    cfg.family = c.family;
    cfg.n_layer = integer("n_layer");
    cfg.n_head = integer("n_head");
    cfg.d_model = integer("d_model");
    cfg.vocab_size = integer("vocab_size");
    cfg.padded_vocab = integer("padded_vocab");
    cfg.max_seq_len = integer("max_seq_len");
    if (has("n_kv_head")) cfg.n_kv_head = integer("n_kv_head");
    if (has("d_ff")) cfg.d_ff = integer("d_ff");
    if (has("rope_theta")) cfg.rope_theta = num("rope_theta");
    if (has("norm_eps")) cfg.norm_eps = num("norm_eps");
    batch.B = integer("B");
    batch.T = integer("T");
    batch.tokens = reader.read_as<int32_t>("tokens", {batch.B, batch.T});
    batch.targets = reader.read_as<int32_t>("targets", {batch.B, batch.T});
  }
  double meta(const char* key) const { return std::stod(reader.metadata(key)); }

  std::unique_ptr<model::Model> make_model() const {
    auto m = model::make_model(cfg, batch.B, batch.T, kernels::cpu_ops());
    for (const auto& v : m->layout().views()) {
      auto x = reader.read_as<float>("param." + v.name, v.shape);
      std::copy(x.begin(), x.end(), m->params().data() + v.offset);
    }
    return m;
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

class ModelFamilyTest : public ::testing::TestWithParam<FamilyCase> {};

}  // namespace

TEST_P(ModelFamilyTest, LogitsLossAndEveryGradientMatchPyTorch) {
  const Golden g(GetParam());
  auto m = g.make_model();
  const Batch& b = g.batch;

  m->forward(b.tokens.data(), nullptr, b.B, b.T);
  const auto ref_logits = g.reader.read_as<double>("logits");
  const int V = g.cfg.vocab_size, Vp = g.cfg.padded_vocab_resolved();
  std::vector<float> ours(size_t(b.B) * b.T * V);
  for (int i = 0; i < b.B * b.T; ++i)
    for (int j = 0; j < V; ++j) ours[size_t(i) * V + j] = m->logits()[size_t(i) * Vp + j];
  // fp32 forward vs float64 reference over 2 layers: errors of a few ulps of the logit scale
  // (the reference's own float32 run differs by ~7e-7 of a max logit ~0.5, i.e. ~1.5e-6).
  EXPECT_LT(rel_max_err(ours.data(), ref_logits), 2e-5);
  // Padded logits columns: the padded rows of the head are zero.
  for (int i = 0; i < b.B * b.T; ++i)
    for (int j = V; j < Vp; ++j) ASSERT_EQ(m->logits()[size_t(i) * Vp + j], 0.0f);

  const float loss = m->forward(b.tokens.data(), b.targets.data(), b.B, b.T);
  const double ref_loss = g.reader.read_as<double>("loss")[0];
  EXPECT_NEAR(loss, ref_loss, 2e-5 * std::abs(ref_loss));

  m->zero_grad();
  m->backward(1.0f);
  int checked = 0;
  for (const auto& v : m->layout().views()) {
    const auto ref = g.reader.read_as<double>("grad." + v.name, v.shape);
    // Gradients pass through more fp32 ops (softmax, norm backward); 1e-4 of each tensor's own
    // scale still catches any wrong term (those give errors of order 1).
    EXPECT_LT(rel_max_err(m->grads().data() + v.offset, ref), 1e-4) << v.name;
    ++checked;
  }
  EXPECT_EQ(checked, GetParam().fixed_params + GetParam().params_per_layer * g.cfg.n_layer);
}

TEST_P(ModelFamilyTest, TenStepAdamWTrajectoryMatchesPyTorch) {
  const Golden g(GetParam());
  auto m = g.make_model();
  AdamWSettings hp;
  hp.lr = g.meta("lr"), hp.beta1 = g.meta("beta1"), hp.beta2 = g.meta("beta2");
  hp.eps = g.meta("eps"), hp.weight_decay = g.meta("weight_decay");
  hp.grad_clip = g.meta("grad_clip");  // the optimizer clips by the global norm
  const auto ref = g.reader.read_as<double>("losses");
  const auto ref_norms = g.reader.read_as<double>("grad_norms");
  ASSERT_EQ(ref.size(), 10u);
  const auto run = run_adamw_trajectory(*m, hp, g.batch, int(ref.size()));
  for (size_t step = 0; step < ref.size(); ++step) {
    EXPECT_NEAR(run[step].loss, ref[step], 1e-4) << "step " << step;
    EXPECT_NEAR(run[step].grad_norm, ref_norms[step], 1e-4 * ref_norms[step]) << "step " << step;
  }
  EXPECT_LT(ref.back(), ref.front() - 0.1) << "the reference itself must learn";
  // Padded rows of the vocabulary tables stay zero through training.
  for (const std::string& name : GetParam().vocab_tables) {
    const auto& v = m->layout().find(name);
    for (size_t i = size_t(g.cfg.vocab_size) * g.cfg.d_model; i < v.numel; ++i)
      ASSERT_EQ(m->params()[v.offset + i], 0.0f) << name << " element " << i;
  }
}

TEST_P(ModelFamilyTest, HookRangesCoverTheBufferAsAGrowingPrefix) {
  model::ModelConfig cfg = GetParam().small;
  cfg.n_layer = 3;
  auto m = model::make_model(cfg, 2, 5, kernels::cpu_ops());
  m->init_weights(1);
  const Batch b = make_batch(2, 5, cfg.vocab_size);
  m->forward(b.tokens.data(), b.targets.data(), 2, 5);
  m->zero_grad();
  std::vector<std::pair<size_t, size_t>> ranges;
  m->backward(1.0f, [&](size_t begin, size_t end) { ranges.emplace_back(begin, end); });
  ASSERT_EQ(ranges.size(), size_t(1 + cfg.n_layer + 1));
  size_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    EXPECT_EQ(begin, covered) << "ranges must form a growing prefix";
    EXPECT_GT(end, begin);
    covered = end;
  }
  EXPECT_EQ(covered, m->layout().total());
  // Between the head's range and the embeddings' range, each block is one range, last first.
  for (int l = cfg.n_layer - 1; l >= 0; --l) {
    const std::string prefix = "blocks." + std::to_string(l) + ".";
    size_t begin = m->layout().total(), end = 0;
    for (const auto& v : m->layout().views())
      if (v.name.starts_with(prefix)) begin = std::min(begin, v.offset), end = v.offset + v.numel;
    EXPECT_EQ(ranges[1 + (cfg.n_layer - 1 - l)], std::make_pair(begin, end)) << prefix;
  }
}

TEST_P(ModelFamilyTest, TwoIdenticalRunsGiveIdenticalBits) {
  const model::ModelConfig cfg = GetParam().small;
  auto run = [&]() {
    auto m = model::make_model(cfg, 3, 16, kernels::cpu_ops());
    m->init_weights(7);
    run_adamw_trajectory(*m, AdamWSettings{}, make_batch(3, 16, cfg.vocab_size), 3);
    return std::vector<float>(m->params().begin(), m->params().end());
  };
  const auto a = run(), b = run();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST_P(ModelFamilyTest, TwoHalfBatchesWithHalfScaleEqualOneFullBatch) {
  const model::ModelConfig cfg = GetParam().small;
  auto full = model::make_model(cfg, 4, 8, kernels::cpu_ops());
  auto half = model::make_model(cfg, 2, 8, kernels::cpu_ops());
  full->init_weights(11);
  half->init_weights(11);
  const Batch b = make_batch(4, 8, cfg.vocab_size);
  const float loss_full = full->forward(b.tokens.data(), b.targets.data(), 4, 8);
  full->zero_grad();
  full->backward(1.0f);
  half->zero_grad();
  double loss_half = 0;
  for (int part = 0; part < 2; ++part) {
    loss_half +=
        0.5 * half->forward(b.tokens.data() + part * 16, b.targets.data() + part * 16, 2, 8);
    half->backward(0.5f);
  }
  EXPECT_NEAR(loss_full, loss_half, 1e-5);
  double num = 0, den = 0;
  for (size_t i = 0; i < full->grads().size(); ++i) {
    num = std::max(num, double(std::abs(full->grads()[i] - half->grads()[i])));
    den = std::max(den, double(std::abs(full->grads()[i])));
  }
  EXPECT_LT(num / den, 1e-5) << "gradient accumulation must add, not overwrite";
}

TEST_P(ModelFamilyTest, OutOfRangeTokensShapesAndEarlyBackwardAreRejected) {
  model::ModelConfig cfg = GetParam().small;
  cfg.n_layer = 1, cfg.max_seq_len = 4;
  auto m = model::make_model(cfg, 1, 4, kernels::cpu_ops());
  std::vector<int32_t> tok = {1, 2, cfg.vocab_size, 3}, tgt = {1, 1, 1, 1};
  EXPECT_THROW(m->forward(tok.data(), tgt.data(), 1, 4), Error);
  tok[2] = 3;
  tgt[1] = -1;
  EXPECT_THROW(m->forward(tok.data(), tgt.data(), 1, 4), Error);
  tgt[1] = 1;
  EXPECT_THROW(m->forward(tok.data(), tgt.data(), 2, 4), Error);          // more than max_batch
  EXPECT_THROW(model::make_model(cfg, 1, 5, kernels::cpu_ops()), Error);  // > max_seq_len
  EXPECT_THROW(m->backward(1.0f), Error);  // no forward with targets yet
  m->forward(tok.data(), nullptr, 1, 4);
  EXPECT_THROW(m->backward(1.0f), Error);  // a forward without targets does not prepare it
  m->forward(tok.data(), tgt.data(), 1, 4);
  m->backward(1.0f);
  EXPECT_THROW(m->backward(1.0f), Error);  // the forward's head gradients are spent
}

INSTANTIATE_TEST_SUITE_P(Families, ModelFamilyTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<FamilyCase>& info) {
                           return std::string(model::family_name(info.param.family));
                         });
