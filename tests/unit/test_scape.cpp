// SCAPE at world size 1 (its numerics without communication) and its mask utilities: exact
// top-k with deterministic ties, mask encodings, Jaccard; sparsity 0 equals dense AdamS; the
// mask used at step t is the one selected after step t-1 and only its coordinates move;
// residual bookkeeping (what is not sent is kept, what is sent is cleared); exactly k per
// shard; checkpoint state round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "comm/single_communicator.h"
#include "core/error.h"
#include "core/rng.h"
#include "kernels/ops.h"
#include "model/param_layout.h"
#include "optim/optimizer.h"
#include "optim/registry.h"
#include "optim/scape.h"
#include "optim/sparse_mask.h"

using namespace gossamer;

namespace {

model::ParamLayout layout_of(size_t n_weight, size_t n_bias) {
  model::ParamLayout l;
  l.add("w", {int64_t(n_weight)}, model::ParamKind::PARAM_KIND_WEIGHT);
  l.add("b", {int64_t(n_bias)}, model::ParamKind::PARAM_KIND_BIAS);
  return l;
}

std::vector<float> random_vector(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * (float(rng.below(2000001)) / 1e6f - 1.0f);
  return v;
}

// An optimizer attached once to a test's parameter vector and its own gradient buffer; each
// step() copies the step's gradient in first.
template <class Opt>
struct Stepper {
  std::unique_ptr<Opt> opt;
  std::vector<float> grads;
  Stepper(std::unique_ptr<Opt> o, std::vector<float>& params)
      : opt(std::move(o)), grads(params.size()) {
    opt->attach(params, grads);
  }
  Opt* operator->() { return opt.get(); }
  void step(const std::vector<float>& g, int64_t t, double lr) {
    std::copy(g.begin(), g.end(), grads.begin());
    opt->step({t, lr});
  }
};

std::vector<float> as_floats(const optim::StateTensor& t) {
  const float* f = static_cast<const float*>(t.data);
  return std::vector<float>(f, f + t.numel);
}

struct Fixture {
  model::ParamLayout layout = layout_of(900, 101);
  std::unique_ptr<comm::Communicator> comm = comm::make_single_communicator();
  optim::OptimizerConfig cfg;
  optim::ParallelConfig par;
  Fixture() {
    cfg.name = "scape";
    cfg.lr = 1e-2;
    cfg.grad_clip = 0;
    cfg.scape.sparsity = 0.9;
    cfg.scape.dense_warmup_steps = 2;
  }
  Stepper<optim::Scape> make(std::vector<float>& params) {
    return {std::make_unique<optim::Scape>(
                optim::OptimizerSetup{cfg, par, layout, kernels::cpu_ops(), *comm, *comm}),
            params};
  }
};

using optim::ScapeReading;

}  // namespace

TEST(SparseMask, TopKIsExactWithTiesToLowerIndices) {
  const std::vector<float> s = {0.5f, 2.0f, 2.0f, -1.0f, 2.0f, NAN, 3.0f, 0.5f};
  EXPECT_EQ(optim::top_k_indices(s, 0), std::vector<uint32_t>{});
  EXPECT_EQ(optim::top_k_indices(s, 1), (std::vector<uint32_t>{6}));
  EXPECT_EQ(optim::top_k_indices(s, 3), (std::vector<uint32_t>{1, 2, 6}));
  EXPECT_EQ(optim::top_k_indices(s, 5), (std::vector<uint32_t>{0, 1, 2, 4, 6}));
  EXPECT_EQ(optim::top_k_indices(s, 7), (std::vector<uint32_t>{0, 1, 2, 3, 4, 6, 7}));
  EXPECT_EQ(optim::top_k_indices(s, 8).size(), 8u);
  // Against a full sort on many ties.
  Rng rng(3);
  std::vector<float> v(5000);
  for (float& x : v) x = float(rng.below(50));
  for (size_t k : {1u, 17u, 333u, 4999u}) {
    std::vector<uint32_t> order(v.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return v[a] > v[b]; });
    order.resize(k);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(optim::top_k_indices(v, k), order) << "k " << k;
  }
}

TEST(SparseMask, EncodingsAndJaccard) {
  const std::vector<uint32_t> mask = {0, 3, 8, 9, 31, 32, 99};
  std::vector<uint8_t> bits((100 + 7) / 8);
  optim::encode_bitmap(mask, 100, bits.data());
  std::vector<uint32_t> back;
  optim::decode_bitmap(bits.data(), 100, 1000, back);
  ASSERT_EQ(back.size(), mask.size());
  for (size_t i = 0; i < mask.size(); ++i) EXPECT_EQ(back[i], mask[i] + 1000);
  EXPECT_EQ(optim::mask_bytes(optim::MaskEncoding::INDICES, 7, 100), 28u);
  EXPECT_EQ(optim::mask_bytes(optim::MaskEncoding::BITMAP, 7, 100), 13u);
  EXPECT_EQ(optim::smaller_encoding(10, 1000), optim::MaskEncoding::INDICES);  // 1%: 40 B vs 125 B
  EXPECT_EQ(optim::smaller_encoding(100, 1000),
            optim::MaskEncoding::BITMAP);  // 10%: 400 B vs 125 B
  EXPECT_DOUBLE_EQ(
      optim::jaccard(std::vector<uint32_t>{1, 2, 3}, std::vector<uint32_t>{2, 3, 4, 5}), 2.0 / 5.0);
  EXPECT_DOUBLE_EQ(optim::jaccard(std::vector<uint32_t>{}, std::vector<uint32_t>{}), 1.0);
}

namespace {

// Six steps of SCAPE at sparsity 0 against dense AdamS from the same start and gradients.
void expect_sparsity_zero_is_adams(ScapeReading reading, float tolerance) {
  Fixture f;
  f.cfg.scape.sparsity = 0;
  f.cfg.weight_decay = 0.1;
  f.cfg.scape.reading = reading;
  std::vector<float> a = random_vector(f.layout.total(), 1), b = a;
  auto scape = f.make(a);
  optim::OptimizerConfig dense_cfg = f.cfg;
  dense_cfg.name = "adams";
  dense_cfg.scape = {};
  Stepper<optim::Optimizer> dense(optim::make_optimizer(dense_cfg, f.layout, kernels::cpu_ops()),
                                  b);
  for (int t = 1; t <= 6; ++t) {
    const std::vector<float> g = random_vector(f.layout.total(), 100 + t);
    scape.step(g, t, 1e-2);
    dense.step(g, t, 1e-2);
  }
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tolerance) << enum_name(reading) << " " << i;
}

}  // namespace

TEST(Scape, SparsityZeroIsDenseAdamS) {
  expect_sparsity_zero_is_adams(ScapeReading::SCAPE_READING_A, 1e-6f);
}

TEST(Scape, StepTUsesTheMaskSelectedAfterStepTMinus1AndOnlyItMoves) {
  Fixture f;
  f.cfg.weight_decay = 0.1;
  std::vector<float> p = random_vector(f.layout.total(), 2);
  auto s = f.make(p);
  const size_t k = s->k_of(0);
  EXPECT_EQ(k, size_t(std::ceil(0.1 * 1001)));
  for (int t = 1; t <= 8; ++t) {
    const bool dense = s->dense_step(t);
    EXPECT_EQ(dense, t <= 2);
    const std::vector<uint32_t> selected_before = s->next_mask_shard();
    std::vector<float> g = random_vector(f.layout.total(), 200 + t), before = p;
    s.step(g, t, 1e-2);
    if (!dense) {
      EXPECT_EQ(s->last_mask(), selected_before) << "step " << t;
      std::vector<bool> in(p.size(), false);
      for (uint32_t i : s->last_mask()) in[i] = true;
      for (size_t i = 0; i < p.size(); ++i) {
        if (!in[i]) {
          ASSERT_EQ(p[i], before[i]) << "step " << t << " coordinate " << i;
        }
      }
    }
    // Exactly k selected for the next step, the k largest |m| (ties to lower indices).
    if (!s->dense_step(t + 1)) {
      EXPECT_EQ(s->next_mask_shard().size(), k);
    }
  }
}

TEST(Scape, ResidualKeepsWhatIsNotSentAndClearsWhatIs) {
  Fixture f;
  f.cfg.scape.dense_warmup_steps = 1;
  std::vector<float> p = random_vector(f.layout.total(), 4);
  auto s = f.make(p);
  std::vector<float> g1 = random_vector(f.layout.total(), 5);
  s.step(g1, 1, 1e-2);  // dense: everything sent, residual empty
  auto residual = [&]() {
    for (const auto& t : s->state())
      if (t.name == "scape.residual") return as_floats(t);
    return std::vector<float>{};
  };
  for (float x : residual()) ASSERT_EQ(x, 0.0f);
  std::vector<float> g2 = random_vector(f.layout.total(), 6), g2copy = g2;
  s.step(g2, 2, 1e-2);
  std::vector<float> r = residual();
  std::vector<bool> sent(p.size(), false);
  for (uint32_t i : s->last_mask()) sent[i] = true;
  for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(r[i], sent[i] ? 0.0f : g2copy[i]) << i;
  std::vector<float> g3 = random_vector(f.layout.total(), 7), g3copy = g3;
  s.step(g3, 3, 1e-2);
  std::vector<float> r3 = residual();
  std::vector<bool> sent3(p.size(), false);
  for (uint32_t i : s->last_mask()) sent3[i] = true;
  for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(r3[i], sent3[i] ? 0.0f : r[i] + g3copy[i]) << i;
  // Without the residual nothing is kept.
  f.cfg.scape.residual = false;
  std::vector<float> p2 = p;
  auto s2 = f.make(p2);
  for (const auto& t : s2->state()) EXPECT_NE(t.name, "scape.residual");
  EXPECT_EQ(s2->state_bytes(), f.layout.total() * sizeof(float));
}

TEST(Scape, StateRoundTripContinuesIdentically) {
  Fixture f;
  std::vector<float> pa = random_vector(f.layout.total(), 8);
  auto a = f.make(pa);
  for (int t = 1; t <= 4; ++t) a.step(random_vector(f.layout.total(), 300 + t), t, 1e-2);
  // Copy a's state into a fresh optimizer, then both take the same steps.
  std::vector<float> pb = pa;
  auto b = f.make(pb);
  auto sa = a->state(), sb = b->state();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    ASSERT_EQ(sa[i].dtype, sb[i].dtype);
    ASSERT_EQ(sa[i].bytes(), sb[i].bytes());
    std::memcpy(sb[i].data, sa[i].data, sa[i].bytes());
  }
  b->state_loaded();
  for (int t = 5; t <= 8; ++t) {
    const std::vector<float> g = random_vector(f.layout.total(), 300 + t);
    a.step(g, t, 1e-2);
    b.step(g, t, 1e-2);
  }
  EXPECT_EQ(pa, pb);
}

// Reading B (docs/SCAPE.md): every rank keeps a dense local momentum and sends it at the mask.
TEST(ScapeReadingB, SparsityZeroIsDenseAdamS) {
  expect_sparsity_zero_is_adams(ScapeReading::SCAPE_READING_B, 2e-6f);
}

TEST(ScapeReadingB, LocalMomentumSeesEveryGradientOnlyTheMaskMoves) {
  Fixture f;
  f.cfg.scape.reading = ScapeReading::SCAPE_READING_B;
  f.cfg.scape.catch_up_max = 3;
  f.cfg.weight_decay = 0;
  const size_t n = f.layout.total();
  std::vector<float> p = random_vector(n, 11);
  auto s = f.make(p);
  auto tensor = [&](const char* name) {
    for (const auto& t : s->state())
      if (t.name == name) return as_floats(t);
    return std::vector<float>{};
  };
  std::vector<double> u(n, 0.0);
  size_t caught_up = 0;  // selections after a skipped step: the catch-up path was checked
  for (int t = 1; t <= 7; ++t) {
    std::vector<float> g = random_vector(n, 300 + t);
    for (size_t i = 0; i < n; ++i) u[i] = 0.9 * u[i] + 0.1 * double(g[i]);
    const std::vector<float> before = p, m_before = tensor("scape.m"),
                             last_before = tensor("scape.last_update");
    const bool dense = s->dense_step(t);
    s.step(g, t, 1e-2);
    const std::vector<float> local = tensor("scape.local_momentum"), m = tensor("scape.m"),
                             last = tensor("scape.last_update");
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(local[i], u[i], 1e-6) << t << " " << i;
    std::vector<bool> in(n, dense);
    for (uint32_t i : s->last_mask()) in[i] = true;
    for (size_t i = 0; i < n; ++i) {
      if (!in[i]) {
        ASSERT_EQ(p[i], before[i]) << t;
        ASSERT_EQ(m[i], m_before[i]) << t;
        ASSERT_EQ(last[i], last_before[i]) << t;
        continue;
      }
      // The step of a selected coordinate, written out in double from the documented formula.
      const double b1 = 0.9, b2 = 0.95, a = t - double(last_before[i]), mt = u[i];
      const double b1a = std::pow(b1, a), gbar = (mt - b1a * m_before[i]) / (1 - b1a);
      const double c = 1 - std::pow(b1, t), prev = (mt - (1 - b1) * gbar) / b1 / c;
      const double den = std::sqrt(b2 * prev * prev + (1 - b2) * gbar * gbar) + 1e-8;
      const double steps = std::min(a, 3.0);
      caught_up += a >= 2;
      ASSERT_NEAR(p[i], before[i] - steps * 1e-2 * (mt / c) / den, 2e-5) << t << " " << i;
      ASSERT_EQ(last[i], float(t));
      ASSERT_NEAR(m[i], mt, 1e-6);
    }
    if (!s->dense_step(t + 1)) {  // the next mask: the top-k of |u|
      std::vector<float> score(n);
      for (size_t i = 0; i < n; ++i) score[i] = std::fabs(local[i]);
      EXPECT_EQ(s->next_mask_shard(), optim::top_k_indices(score, s->k_of(0))) << t;
    }
  }
  EXPECT_GT(caught_up, 0u);
}

TEST(ScapeReadingB, ConfigErrorsNameTheKey) {
  optim::OptimizerConfig cfg;
  cfg.name = "scape";
  cfg.scape.catch_up_max = 4;
  auto message = [&]() {
    try {
      cfg.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message().find("catch_up_max"), std::string::npos) << message();
  EXPECT_NE(message().find("optimizer.scape."), std::string::npos) << message();
  cfg.scape.reading = ScapeReading::SCAPE_READING_B;
  EXPECT_EQ(message(), "");
  cfg.scape.mask_score = optim::MaskScore::MASK_SCORE_MOMENTUM_RESIDUAL;
  EXPECT_NE(message().find("optimizer.scape.mask_score"), std::string::npos) << message();
}
