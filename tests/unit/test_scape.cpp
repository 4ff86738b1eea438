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
#include "optim/selection_report.h"
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
    // The specified reading (the tests below check its formulas; those of the switches set
    // them), not the defaults.
    cfg.scape.mask_score = optim::MaskScore::MASK_SCORE_MOMENTUM;
    cfg.scape.normaliser = optim::ScapeNormaliser::SCAPE_NORMALISER_STEP;
    cfg.scape.mask_age_bonus = 0;
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
void expect_sparsity_zero_is_adams(
    ScapeReading reading, float tolerance,
    optim::ErrorFeedback feedback = optim::ErrorFeedback::ERROR_FEEDBACK_GRADIENT) {
  Fixture f;
  f.cfg.scape.sparsity = 0;
  f.cfg.weight_decay = 0.1;
  f.cfg.scape.reading = reading;
  f.cfg.scape.error_feedback = feedback;
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
    ASSERT_NEAR(a[i], b[i], tolerance)
        << enum_name(reading) << " " << enum_name(feedback) << " " << i;
}

}  // namespace

// The per-tensor report counts mask entries inside each tensor, whatever the mask's order.
TEST(SparseMask, SelectionByTensorCountsEntriesPerTensor) {
  model::ParamLayout l;
  l.add("a", {4}, model::ParamKind::PARAM_KIND_WEIGHT);     // [0, 4)
  l.add("b", {2, 3}, model::ParamKind::PARAM_KIND_WEIGHT);  // [4, 10)
  l.add("c", {5}, model::ParamKind::PARAM_KIND_BIAS);       // [10, 15)
  const std::vector<uint32_t> mask = {12, 3, 4, 9, 0, 5};   // rank by rank: not sorted
  const auto f = optim::selection_by_tensor(l, mask);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].first, "selected_fraction.a");
  EXPECT_DOUBLE_EQ(f[0].second, 2.0 / 4);
  EXPECT_DOUBLE_EQ(f[1].second, 3.0 / 6);
  EXPECT_DOUBLE_EQ(f[2].second, 1.0 / 5);
  const std::vector<uint32_t> outside = {15};
  EXPECT_THROW(optim::selection_by_tensor(l, outside), Error);
}

TEST(Scape, SparsityZeroIsDenseAdamS) {
  expect_sparsity_zero_is_adams(ScapeReading::SCAPE_READING_A, 1e-6f);
  expect_sparsity_zero_is_adams(ScapeReading::SCAPE_READING_A, 1e-6f,
                                optim::ErrorFeedback::ERROR_FEEDBACK_REPLAY);
  expect_sparsity_zero_is_adams(ScapeReading::SCAPE_READING_A, 2e-6f,
                                optim::ErrorFeedback::ERROR_FEEDBACK_MOMENTUM);
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
  // The logged residual norm is that of what stays unsent.
  double unsent_sq = 0;
  for (float x : r3) unsent_sq += double(x) * x;
  double logged = -1;
  for (const auto& [k, v] : s->step_metrics())
    if (k == "residual_norm") logged = v;
  EXPECT_NEAR(logged, std::sqrt(unsent_sq), 1e-4 * std::sqrt(unsent_sq));
  // Without the residual nothing is kept.
  f.cfg.scape.residual = false;
  std::vector<float> p2 = p;
  auto s2 = f.make(p2);
  for (const auto& t : s2->state()) EXPECT_NE(t.name, "scape.residual");
  EXPECT_EQ(s2->state_bytes(), 2 * f.layout.total() * sizeof(float));  // m and update steps
}

// Without a residual the synchronised value is one step's gradient whatever a coordinate's age,
// so the age normaliser (the default) is the step normaliser there: the same parameters bit for
// bit over sparse steps in which coordinates come back after several steps.
TEST(Scape, AgeNormaliserWithoutResidualIsTheStepNormaliser) {
  auto run = [](optim::ScapeNormaliser normaliser) {
    Fixture f;
    f.cfg.scape.residual = false;
    f.cfg.scape.normaliser = normaliser;
    std::vector<float> p = random_vector(f.layout.total(), 21);
    auto s = f.make(p);
    for (int64_t t = 1; t <= 8; ++t) s.step(random_vector(f.layout.total(), 30 + t), t, 1e-2);
    return p;
  };
  const std::vector<float> step = run(optim::ScapeNormaliser::SCAPE_NORMALISER_STEP);
  EXPECT_EQ(run(optim::ScapeNormaliser::SCAPE_NORMALISER_AGE), step);
}

// mask_per_tensor: a tensor whose gradients are 10^4 times smaller gets no share of one raw top-k,
// and about its share of the coordinates once every score is divided by its tensor's RMS.
TEST(Scape, MaskPerTensorGivesEveryTensorItsShare) {
  auto selected_in_w = [](bool per_tensor) {
    Fixture f;  // w: 900 coordinates, then b: 101; k = ceil(0.1 * 1001) = 101
    f.cfg.scape.dense_warmup_steps = 1;
    f.cfg.scape.mask_per_tensor = per_tensor;
    std::vector<float> p = random_vector(f.layout.total(), 4);
    auto s = f.make(p);
    std::vector<float> g = random_vector(f.layout.total(), 5);
    for (size_t i = 0; i < 900; ++i) g[i] *= 1e-4f;
    s.step(g, 1, 1e-2);  // dense; the mask of step 2 is selected from m = (1 - beta1) g
    size_t in_w = 0;
    for (uint32_t i : s->next_mask_shard()) in_w += i < 900;
    EXPECT_EQ(s->next_mask_shard().size(), 101u);
    return in_w;
  };
  EXPECT_EQ(selected_in_w(false), 0u);  // all 101 go to b
  const size_t in_w = selected_in_w(true);
  EXPECT_GE(in_w, 70u);  // about 90 of 101 (w is 89.9% of the coordinates)
  EXPECT_LE(in_w, 98u);
}

// The indexed AdamS kernel on four coordinates, against the formulas written out in double:
// one updated the step before (a = 1), one unselected for a = 4 steps, one of unknown age
// (-1: counted as a = 1), one without weight decay; with and without the age normaliser and
// lazy decay. Parameters are addressed by flat index, state by local index.
TEST(ScapeKernels, IndexedAdamSWithAgeNormaliserAndLazyDecay) {
  const kernels::OpTable& ops = kernels::cpu_ops();
  const double lr = 0.01, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  const int64_t t = 10;
  const double c = 1 - std::pow(b1, double(t));
  for (bool aged : {false, true}) {
    std::vector<float> param = {9, 1.0f, 9, -2.0f, 0.5f, 9, 3.0f};  // flat; 9: untouched
    const std::vector<uint32_t> pidx = {1, 3, 4, 6};
    std::vector<float> m = {0.2f, -0.1f, 0.05f, 0.0f};  // local state
    std::vector<float> last = {9.0f, 6.0f, -1.0f, 2.0f};
    const std::vector<uint32_t> idx = {0, 1, 2, 3};
    const std::vector<float> g = {0.3f, -0.8f, 0.1f, 1.2f};
    const std::vector<uint8_t> decay = {1, 1, 1, 0};
    const std::vector<float> p0 = param, m0 = m;
    ops.adams_update_indexed(param.data(), pidx.data(), idx.data(), g.data(), 4,
                             {.m = m.data(), .last = last.data(), .decay = decay.data()},
                             {.lr = float(lr),
                              .beta1 = float(b1),
                              .beta2 = float(b2),
                              .eps = float(eps),
                              .weight_decay = float(wd),
                              .t = t,
                              .age_normaliser = aged,
                              .lazy_decay = aged});
    const int ages[] = {1, 4, 1, 8};
    for (size_t j = 0; j < 4; ++j) {
      const double a = ages[j], gj = g[j], gn = aged ? gj / a : gj;
      const double prev = m0[j] / c;
      const double den = std::sqrt(b2 * prev * prev + (1 - b2) * gn * gn) + eps;
      const double mj = b1 * m0[j] + (1 - b1) * gj;
      const double keep = decay[j] ? std::pow(1 - lr * wd, aged ? a : 1.0) : 1.0;
      const double want = p0[pidx[j]] * keep - lr * (mj / c) / den;
      EXPECT_NEAR(param[pidx[j]], want, 1e-6) << "coordinate " << j << (aged ? " aged" : "");
      EXPECT_NEAR(m[j], mj, 1e-7);
      EXPECT_EQ(last[j], float(t));
    }
    for (size_t i : {0, 2, 5}) EXPECT_EQ(param[i], 9.0f);
  }
  // The age normaliser lets an accumulated residual move its coordinate in proportion: a
  // coordinate fed g for a = 4 steps at once moves about 4x one step's move (from m = 0, the
  // step is lr g / sqrt(1 - b2) (g/a)... divided by the bias factor).
  std::vector<float> p1 = {0.0f}, mm = {0.0f}, l1 = {6.0f};
  const std::vector<uint32_t> zero = {0};
  const std::vector<float> mass = {4 * 0.5f};
  const std::vector<uint8_t> no_decay = {0};
  ops.adams_update_indexed(p1.data(), zero.data(), zero.data(), mass.data(), 1,
                           {.m = mm.data(), .last = l1.data(), .decay = no_decay.data()},
                           {.lr = 1.0f,
                            .beta1 = 0.9f,
                            .beta2 = 0.95f,
                            .eps = 0.0f,
                            .weight_decay = 0.0f,
                            .t = 10,
                            .code_form = false,
                            .age_normaliser = true});
  EXPECT_NEAR(p1[0], -(0.1 * 2.0) / (std::sqrt(0.05) * 0.5), 1e-5);  // 4x the one-step move
}

// The replaying kernels on four coordinates (a = 1, 4, unknown = 1, 8), against the a steps
// written out one by one in double: GRADIENT_REPLAY with g the mass of a steps of gbar = g / a;
// MOMENTUM_SUM with g the sum of the a momenta since the last update, continuing from m or
// restarted from zero (factor masking). The move is lr times the sum of the a momenta over one
// normaliser, that of the last of the a steps, or the frozen one, sqrt(den_sq) (left as it was).
TEST(ScapeKernels, ReplayAndMomentumSumApplyEveryStepsMomentum) {
  using kernels::Accumulated;
  const kernels::OpTable& ops = kernels::cpu_ops();
  const double lr = 0.01, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  const int64_t t = 10;
  const double c = 1 - std::pow(b1, double(t));
  struct Case {
    Accumulated kind;
    bool restarts;
    bool frozen;  // divide by sqrt(den_sq) instead (the frozen normaliser)
  };
  for (Case k :
       {Case{Accumulated::GRADIENT_REPLAY, false, false},
        Case{Accumulated::MOMENTUM_SUM, false, false}, Case{Accumulated::MOMENTUM_SUM, true, false},
        Case{Accumulated::GRADIENT_REPLAY, false, true}}) {
    std::vector<float> param = {9, 1.0f, 9, -2.0f, 0.5f, 9, 3.0f};  // flat; 9: untouched
    const std::vector<uint32_t> pidx = {1, 3, 4, 6};
    std::vector<float> m = {0.2f, -0.1f, 0.05f, 0.0f};
    std::vector<float> last = {9.0f, 6.0f, -1.0f, 2.0f};
    const std::vector<uint32_t> idx = {0, 1, 2, 3};
    const std::vector<double> gbar = {0.3, -0.2, 0.1, 0.15};  // each coordinate's steady gradient
    const int ages[] = {1, 4, 1, 8};
    const std::vector<uint8_t> decay = {1, 1, 1, 0};
    // Walk the a steps in double: the momenta, their sum and the last normaliser.
    std::vector<float> g(4);
    std::vector<double> sum(4), m_end(4), den(4);
    for (size_t j = 0; j < 4; ++j) {
      double mj = k.restarts ? 0.0 : m[j], prev = mj;
      for (int s = 0; s < ages[j]; ++s) {
        prev = mj;
        mj = b1 * mj + (1 - b1) * gbar[j];
        sum[j] += mj;
      }
      m_end[j] = mj;
      den[j] = std::sqrt(b2 * (prev / c) * (prev / c) + (1 - b2) * gbar[j] * gbar[j]) + eps;
      g[j] = float(k.kind == Accumulated::GRADIENT_REPLAY ? ages[j] * gbar[j] : sum[j]);
    }
    const std::vector<float> p0 = param;
    std::vector<float> den_sq = {0.04f, 0.09f, 0.01f, 0.25f};
    if (k.frozen)
      for (size_t j = 0; j < 4; ++j) den[j] = std::sqrt(double(den_sq[j]));
    ops.adams_update_indexed(param.data(), pidx.data(), idx.data(), g.data(), 4,
                             {.m = m.data(),
                              .last = last.data(),
                              .decay = decay.data(),
                              .den_sq = k.frozen ? den_sq.data() : nullptr},
                             {.lr = float(lr),
                              .beta1 = float(b1),
                              .beta2 = float(b2),
                              .eps = float(eps),
                              .weight_decay = float(wd),
                              .t = t,
                              .lazy_decay = true,
                              .accumulated = k.kind,
                              .momentum_restarts = k.restarts,
                              .frozen_normaliser = k.frozen});
    for (size_t j = 0; j < 4; ++j) {
      if (k.frozen) {
        EXPECT_EQ(den_sq[j], std::vector<float>({0.04f, 0.09f, 0.01f, 0.25f})[j]);
      }
      const double keep = decay[j] ? std::pow(1 - lr * wd, ages[j]) : 1.0;
      const double want = p0[pidx[j]] * keep - lr * (sum[j] / c) / den[j];
      EXPECT_NEAR(param[pidx[j]], want, 2e-6)
          << "coordinate " << j << " kind " << int(k.kind) << " restarts " << k.restarts;
      EXPECT_NEAR(m[j], m_end[j], 1e-6) << "coordinate " << j;
      EXPECT_EQ(last[j], float(t));
    }
    for (size_t i : {0, 2, 5}) EXPECT_EQ(param[i], 9.0f);
  }
}

// Not frozen, den_sq tracks AdamS's squared normaliser: den^2 where it was 0, else
// beta2 den_sq + (1 - beta2) den^2; the update itself is AdamS's.
TEST(ScapeKernels, FrozenNormaliserIsTrackedOnUnfrozenUpdates) {
  const kernels::OpTable& ops = kernels::cpu_ops();
  const double lr = 0.01, b1 = 0.9, b2 = 0.95, eps = 1e-8;
  std::vector<float> param = {1.0f, -1.0f}, m = {0.2f, -0.1f}, last = {4.0f, 4.0f},
                     den_sq = {0.0f, 0.5f};
  const std::vector<uint32_t> idx = {0, 1};
  const std::vector<float> g = {0.3f, -0.8f};
  const std::vector<uint8_t> decay = {0, 0};
  const std::vector<float> p0 = param, m0 = m;
  ops.adams_update_indexed(
      param.data(), idx.data(), idx.data(), g.data(), 2,
      {.m = m.data(), .last = last.data(), .decay = decay.data(), .den_sq = den_sq.data()},
      {.lr = float(lr),
       .beta1 = float(b1),
       .beta2 = float(b2),
       .eps = float(eps),
       .weight_decay = 0.0f,
       .t = 5,
       .code_form = false});
  for (size_t j = 0; j < 2; ++j) {
    const double den = std::sqrt(b2 * m0[j] * m0[j] + (1 - b2) * g[j] * g[j]) + eps;
    const double mj = b1 * m0[j] + (1 - b1) * g[j];
    EXPECT_NEAR(param[j], p0[j] - lr * mj / den, 1e-6) << j;
    const double want = j == 0 ? den * den : b2 * 0.5 + (1 - b2) * den * den;
    EXPECT_NEAR(den_sq[j], want, 1e-6) << j;
  }
}

// error_feedback "momentum": every rank's local momentum u = b1 u + (1 - b1) g sees every
// gradient; the residual accumulates u, is cleared where sent; with factor masking u restarts
// where sent (and everywhere after the warm-up's last dense step), without it u continues.
TEST(Scape, MomentumFeedbackAccumulatesTheLocalMomentum) {
  for (bool masking : {true, false}) {
    Fixture f;
    f.cfg.scape.dense_warmup_steps = 1;
    f.cfg.scape.error_feedback = optim::ErrorFeedback::ERROR_FEEDBACK_MOMENTUM;
    f.cfg.scape.momentum_factor_masking = masking;
    std::vector<float> p = random_vector(f.layout.total(), 4);
    auto s = f.make(p);
    auto state = [&](const char* name) {
      for (const auto& t : s->state())
        if (t.name == name) return as_floats(t);
      return std::vector<float>{};
    };
    const size_t P = p.size();
    std::vector<double> u(P, 0.0), e(P, 0.0);
    const double b1 = f.cfg.beta1;
    for (int64_t t = 1; t <= 4; ++t) {
      const std::vector<float> g = random_vector(P, uint64_t(20 + t));
      s.step(g, t, 1e-2);
      std::vector<bool> sent(P, t == 1);
      for (uint32_t i : s->last_mask()) sent[i] = true;
      size_t wrong_u = 0, wrong_e = 0;
      const std::vector<float> uu = state("scape.local_momentum"), ee = state("scape.residual");
      ASSERT_EQ(uu.size(), P);
      for (size_t i = 0; i < P; ++i) {
        u[i] = b1 * u[i] + (1 - b1) * g[i];
        e[i] = sent[i] ? 0.0 : e[i] + u[i];
        if (masking && sent[i]) u[i] = 0.0;  // step 1 is the warm-up's last dense step
        wrong_u += std::fabs(uu[i] - u[i]) > 1e-6;
        wrong_e += std::fabs(ee[i] - e[i]) > 1e-6;
      }
      EXPECT_EQ(wrong_u, 0u) << "step " << t << (masking ? " masking" : "");
      EXPECT_EQ(wrong_e, 0u) << "step " << t << (masking ? " masking" : "");
    }
  }
  // Factor masking with a dense refresh is refused with the key.
  Fixture f;
  f.cfg.scape.error_feedback = optim::ErrorFeedback::ERROR_FEEDBACK_MOMENTUM;
  f.cfg.scape.dense_refresh_every = 10;
  try {
    f.cfg.scape.validate("optimizer.scape.");
    FAIL() << "accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("optimizer.scape.momentum_factor_masking"),
              std::string::npos)
        << err.what();
  }
}

// With residual_keeps_clipped, a clipped sparse step leaves (1 - c) of what was sent in the
// residual at the mask; without it the mask's entries are cleared. Coverage and mean update
// age are logged.
TEST(Scape, ClippedShareStaysInTheResidualAndAgesAreLogged) {
  for (bool keep : {false, true}) {
    Fixture f;
    f.cfg.grad_clip = 0.05;  // always clips these gradients
    f.cfg.scape.dense_warmup_steps = 1;
    f.cfg.scape.residual_keeps_clipped = keep;
    std::vector<float> p = random_vector(f.layout.total(), 4);
    auto s = f.make(p);
    auto residual = [&] {
      for (const auto& t : s->state())
        if (t.name == "scape.residual") return as_floats(t);
      return std::vector<float>{};
    };
    s.step(random_vector(f.layout.total(), 5), 1, 1e-2);  // dense, clipped: keeps (1 - c1) g1
    std::vector<double> a(p.size());
    const std::vector<float> r1 = residual(), g2 = random_vector(f.layout.total(), 6);
    for (size_t i = 0; i < p.size(); ++i) a[i] = double(r1[i]) + g2[i];
    s.step(g2, 2, 1e-2);
    double sent_sq = 0;
    for (uint32_t i : s->last_mask()) sent_sq += a[i] * a[i];
    const double clip = 0.05 / (std::sqrt(sent_sq) + 1e-6);
    ASSERT_LT(clip, 1.0);
    const std::vector<float> r = residual();
    std::vector<bool> sent(p.size(), false);
    for (uint32_t i : s->last_mask()) sent[i] = true;
    size_t wrong = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      const double want = !sent[i] ? a[i] : keep ? (1 - clip) * a[i] : 0.0;
      wrong += std::fabs(r[i] - want) > 1e-5 * (1 + std::fabs(want));
    }
    EXPECT_EQ(wrong, 0u) << (keep ? "keeping" : "dropping") << " the clipped share";
    double coverage = -1, mean_age = -1;
    for (const auto& [k, v] : s->step_metrics()) {
      if (k == "coverage") coverage = v;
      if (k == "mean_age") mean_age = v;
    }
    EXPECT_EQ(coverage, 0.0);  // before step 2 nothing was updated after the warm-up
    EXPECT_EQ(mean_age, 0.0);  // everything was updated at step 1
    s.step(random_vector(f.layout.total(), 7), 3, 1e-2);
    for (const auto& [k, v] : s->step_metrics()) {
      if (k == "coverage") coverage = v;
      if (k == "mean_age") mean_age = v;
    }
    const double frac = double(s->last_mask().size()) / double(p.size());
    EXPECT_NEAR(coverage, frac, 0.011);        // step 2's mask: ~10%, before step 3
    EXPECT_NEAR(mean_age, 1.0 - frac, 0.011);  // unselected at step 2: age 1; selected: 0
  }
}

// The sparsity ramp: after the warm-up the mask of step t selects ceil(d(t) P) coordinates,
// d falling geometrically from 1 - ramp_start_sparsity to 1 - sparsity over the ramp.
TEST(Scape, SparsityRampsGeometricallyAfterTheWarmUp) {
  Fixture f;
  f.cfg.scape.dense_warmup_steps = 2;
  f.cfg.scape.sparsity_ramp_steps = 4;
  f.cfg.scape.ramp_start_sparsity = 0.75;
  f.cfg.scape.sparsity = 0.99;
  std::vector<float> p = random_vector(f.layout.total(), 4);
  auto s = f.make(p);
  const double P = double(p.size());
  for (int64_t t = 1; t <= 9; ++t) {
    s.step(random_vector(f.layout.total(), uint64_t(10 + t)), t, 1e-2);
    if (t <= 2) continue;
    // d(3) = 0.25, then x (0.01 / 0.25)^(1/4) per step, d(7) onwards = 0.01.
    const double d = t >= 7 ? 0.01 : 0.25 * std::pow(0.04, double(t - 3) / 4.0);
    EXPECT_NEAR(s->density_at(t), d, 1e-12) << t;
    EXPECT_EQ(s->last_mask().size(), size_t(std::ceil(d * P))) << "step " << t;
  }
}

// stale_momentum: at a sparse step every unselected coordinate moves by lr times its last step
// (here step 1's, a dense AdamS step: (p0 - p1) / lr1 without weight decay); the selected ones
// are updated exactly as without it.
TEST(Scape, StaleMomentumMovesUnselectedCoordinatesByTheirLastStep) {
  std::vector<std::vector<float>> after1, after2;
  std::vector<uint32_t> mask2;
  const double lr1 = 1e-2, lr2 = 2e-2;
  for (bool stale : {false, true}) {
    Fixture f;
    f.cfg.weight_decay = 0;
    f.cfg.scape.dense_warmup_steps = 1;
    f.cfg.scape.stale_momentum = stale;
    std::vector<float> p = random_vector(f.layout.total(), 4);
    auto s = f.make(p);
    s.step(random_vector(f.layout.total(), 5), 1, lr1);
    after1.push_back(p);
    s.step(random_vector(f.layout.total(), 6), 2, lr2);
    after2.push_back(p);
    mask2 = s->last_mask();
  }
  const std::vector<float> p0 = random_vector(after1[0].size(), 4);
  std::vector<bool> sel(p0.size(), false);
  for (uint32_t i : mask2) sel[i] = true;
  size_t wrong = 0;
  for (size_t i = 0; i < p0.size(); ++i) {
    ASSERT_EQ(after1[0][i], after1[1][i]);  // step 1 is dense: the same update
    const double dir = (double(p0[i]) - after1[1][i]) / lr1;
    const double want = sel[i] ? after2[0][i] : after1[1][i] - lr2 * dir;
    wrong += std::fabs(after2[1][i] - want) > 1e-6;
  }
  EXPECT_EQ(wrong, 0u) << "of " << p0.size() << " coordinates";
  EXPECT_GT(mask2.size(), 0u);
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
  // The update-age telemetry is rebuilt from the loaded state.
  auto telemetry = [](const optim::Scape& s) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& kv : s.step_metrics())
      if (kv.first == "coverage" || kv.first == "mean_age" || kv.first == "residual_norm")
        out.push_back(kv);
    return out;
  };
  EXPECT_EQ(telemetry(*a.opt), telemetry(*b.opt));
  EXPECT_EQ(telemetry(*a.opt).size(), 3u);
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
  cfg.scape.mask_score = optim::MaskScore::MASK_SCORE_MOMENTUM_RESIDUAL;  // = momentum in B
  EXPECT_EQ(message(), "");
  cfg.scape.normaliser = optim::ScapeNormaliser::SCAPE_NORMALISER_FROZEN;
  EXPECT_NE(message().find("optimizer.scape.normaliser"), std::string::npos) << message();
}
