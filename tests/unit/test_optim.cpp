// AdamW against values computed by hand from the update formula, weight decay only on
// linear-layer matrices, the registry, and the fused CPU update (called through the op table,
// kernels::cpu_ops()) vs a double reference; the same for AdamS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/ops.h"
#include "model/param_layout.h"
#include "optim/optimizer.h"
#include "optim/registry.h"
#include "optim/shard_layout.h"
#include "optim/update_rule.h"
#include "test_util.h"

using namespace gossamer;
using gossamer::testing::expect_error;

namespace {

// Reference AdamW, scalar double, exactly the formula of kernels/cpu/adamw.h.
void adamw_ref(double& p, double g, double& m, double& v, double lr, double b1, double b2,
               double eps, double wd, int t) {
  p *= 1 - lr * wd;
  m = b1 * m + (1 - b1) * g;
  v = b2 * v + (1 - b2) * g * g;
  const double mhat = m / (1 - std::pow(b1, t)), vhat = v / (1 - std::pow(b2, t));
  p -= lr * mhat / (std::sqrt(vhat) + eps);
}

model::ParamLayout small_layout() {
  model::ParamLayout l;
  l.add("w", {2, 3}, model::ParamKind::PARAM_KIND_WEIGHT);
  l.add("b", {3}, model::ParamKind::PARAM_KIND_BIAS);
  l.add("ln", {2}, model::ParamKind::PARAM_KIND_NORM);
  l.add("emb", {4, 2}, model::ParamKind::PARAM_KIND_EMBEDDING);
  l.add("w2", {1, 2}, model::ParamKind::PARAM_KIND_WEIGHT);
  return l;
}

}  // namespace

TEST(AdamW, FirstStepMovesEachCoordinateByLrTimesSign) {
  // At t = 1, mhat = g and vhat = g^2, so the step is lr * g / (|g| + eps) = lr * sign(g).
  float p[4] = {1, 1, 1, 1}, g[4] = {0.5f, -2.0f, 1e-3f, -7.0f}, m[4] = {}, v[4] = {};
  kernels::cpu_ops().adamw_update(
      p, g, m, v, 4,
      {.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-12f, .weight_decay = 0.0f, .t = 1});
  EXPECT_NEAR(p[0], 0.9f, 1e-6);
  EXPECT_NEAR(p[1], 1.1f, 1e-6);
  EXPECT_NEAR(p[2], 0.9f, 1e-6);
  EXPECT_NEAR(p[3], 1.1f, 1e-6);
  EXPECT_NEAR(m[1], -0.2f, 1e-7);
  EXPECT_NEAR(v[1], 0.2f, 1e-7);
}

TEST(AdamW, MatchesTheScalarReferenceOverManySteps) {
  const int n = 1031;  // odd size: exercises the vector remainder
  std::vector<float> p(n), m(n), v(n), g(n);
  std::vector<double> pr(n), mr(n), vr(n);
  for (int i = 0; i < n; ++i) p[i] = pr[i] = std::sin(i * 0.37);
  for (int t = 1; t <= 20; ++t) {
    for (int i = 0; i < n; ++i) g[i] = float(std::cos(i * 0.11 + t) * (1 + i % 7));
    kernels::cpu_ops().adamw_update(
        p.data(), g.data(), m.data(), v.data(), n,
        {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .t = t});
    for (int i = 0; i < n; ++i) adamw_ref(pr[i], g[i], mr[i], vr[i], 1e-2, 0.9, 0.95, 1e-8, 0.1, t);
  }
  for (int i = 0; i < n; ++i) ASSERT_NEAR(p[i], pr[i], 2e-6) << i;
}

TEST(AdamW, WeightDecayOnlyOnLinearLayerMatrices) {
  const model::ParamLayout layout = small_layout();
  optim::OptimizerConfig cfg;
  cfg.lr = 0.5;
  cfg.weight_decay = 0.1;
  auto opt = optim::make_optimizer(cfg, layout, kernels::cpu_ops());
  EXPECT_STREQ(opt->name(), "adamw");
  std::vector<float> params(layout.total(), 2.0f), grads(layout.total(), 0.0f);
  opt->attach(params, grads);
  opt->step({1, cfg.lr});  // zero gradient: only decay can move a parameter
  for (const auto& view : layout.views()) {
    const bool decays = view.kind == model::ParamKind::PARAM_KIND_WEIGHT;
    for (size_t i = 0; i < view.numel; ++i)
      EXPECT_FLOAT_EQ(params[view.offset + i], decays ? 2.0f * (1 - 0.5f * 0.1f) : 2.0f)
          << view.name;
  }
  auto state = opt->state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].name, "adamw.m");
  EXPECT_EQ(state[1].name, "adamw.v");
  EXPECT_EQ(state[0].numel, layout.total());
  EXPECT_EQ(state[0].dtype, optim::StateDType::STATE_DTYPE_F32);
  EXPECT_EQ(state[0].scope, optim::StateScope::STATE_SCOPE_SHARDED);
  EXPECT_EQ(opt->state_bytes(), 2 * layout.total() * sizeof(float));
}

TEST(OptimizerRegistry, UnknownNamesAndBadHyperparametersAreErrors) {
  optim::OptimizerConfig cfg;
  cfg.name = "lion";
  try {
    optim::make_optimizer(cfg, small_layout(), kernels::cpu_ops());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "optimizer.name: unknown optimizer \"lion\" (known: adamw, adams, scape, dst, smet, "
            "local_adamw, diloco, gasloc, gossip)"),
        std::string::npos);
  }
  cfg.name = "adamw";
  cfg.beta2 = 1.0;
  EXPECT_THROW(optim::make_optimizer(cfg, small_layout(), kernels::cpu_ops()), Error);
}

namespace {

// Reference AdamS, scalar double, the formulas of docs/SCAPE.md ("AdamS").
void adams_ref(double& p, double g, double& m, double lr, double b1, double b2, double eps,
               double wd, int t, bool code_form) {
  const double c = code_form ? 1 - std::pow(b1, t) : 1.0;
  p *= 1 - lr * wd;
  const double prev = m / c;
  const double den = std::sqrt(b2 * prev * prev + (1 - b2) * g * g) + eps;
  m = b1 * m + (1 - b1) * g;
  p -= lr * (m / c) / den;
}

}  // namespace

TEST(AdamS, FirstStepIsLrOverSqrtOneMinusBeta2TimesSign) {
  // Code form, m_0 = 0: den = sqrt(1 - b2)|g|, m_1 / c_1 = g, so the step is lr / sqrt(1 - b2).
  float p[3] = {1, 1, 1}, g[3] = {0.5f, -2.0f, 3e-3f}, m[3] = {};
  const kernels::OpTable& ops = kernels::cpu_ops();
  ops.adams_update(p, g, m, 3,
                   {.lr = 0.1f,
                    .beta1 = 0.9f,
                    .beta2 = 0.95f,
                    .eps = 1e-12f,
                    .weight_decay = 0.0f,
                    .t = 1,
                    .code_form = true});
  const double step = 0.1 / std::sqrt(0.05);
  EXPECT_NEAR(p[0], 1 - step, 1e-5);
  EXPECT_NEAR(p[1], 1 + step, 1e-5);
  EXPECT_NEAR(p[2], 1 - step, 1e-4);
  EXPECT_NEAR(m[1], -0.2f, 1e-7);
  // Paper form: no bias correction, the first step is lr (1 - b1) / sqrt(1 - b2).
  float q[1] = {1}, h[1] = {0.5f}, n[1] = {};
  ops.adams_update(q, h, n, 1,
                   {.lr = 0.1f,
                    .beta1 = 0.9f,
                    .beta2 = 0.95f,
                    .eps = 1e-12f,
                    .weight_decay = 0.0f,
                    .t = 1,
                    .code_form = false});
  EXPECT_NEAR(q[0], 1 - 0.1 * 0.1 / std::sqrt(0.05), 1e-6);
}

TEST(AdamS, MatchesTheScalarReferenceInBothForms) {
  for (bool code_form : {true, false}) {
    const int n = 1031;
    std::vector<float> p(n), m(n), g(n);
    std::vector<double> pr(n), mr(n);
    for (int i = 0; i < n; ++i) p[i] = pr[i] = std::sin(i * 0.37);
    for (int t = 1; t <= 20; ++t) {
      for (int i = 0; i < n; ++i) g[i] = float(std::cos(i * 0.11 + t) * (1 + i % 7));
      kernels::cpu_ops().adams_update(p.data(), g.data(), m.data(), n,
                                      {.lr = 1e-2f,
                                       .beta1 = 0.9f,
                                       .beta2 = 0.95f,
                                       .eps = 1e-8f,
                                       .weight_decay = 0.1f,
                                       .t = t,
                                       .code_form = code_form});
      for (int i = 0; i < n; ++i)
        adams_ref(pr[i], g[i], mr[i], 1e-2, 0.9, 0.95, 1e-8, 0.1, t, code_form);
    }
    for (int i = 0; i < n; ++i) ASSERT_NEAR(p[i], pr[i], 2e-6) << i << " code_form " << code_form;
  }
}

TEST(AdamS, EachCoordinateMovesAtMostAbout1_03Lr) {
  // |m_t| / sqrt(b2 m_{t-1}^2 + (1 - b2) g_t^2) <= sqrt(b1^2 / b2 + (1 - b1)^2 / (1 - b2)) = 1.026
  // for (0.9, 0.95): the paper form from the first step, the code form once 1 - b1^t ~ 1.
  const int n = 1024;
  const double lr = 1e-2, bound = std::sqrt(0.81 / 0.95 + 0.01 / 0.05);
  ASSERT_LT(bound, 1.03);
  for (bool code_form : {false, true}) {
    std::vector<float> p(n, 0.0f), m(n, 0.0f), g(n);
    uint64_t s = 12345;
    double worst = 0;
    for (int t = 1; t <= 200; ++t) {
      for (int i = 0; i < n; ++i) {  // heavy-tailed, sign-flipping gradients
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double u = double(s >> 11) / 9007199254740992.0;
        g[i] = float((u < 0.5 ? -1 : 1) * std::pow(10.0, 6 * u - 3));
      }
      std::vector<float> before = p;
      kernels::cpu_ops().adams_update(p.data(), g.data(), m.data(), n,
                                      {.lr = float(lr),
                                       .beta1 = 0.9f,
                                       .beta2 = 0.95f,
                                       .eps = 1e-12f,
                                       .weight_decay = 0.0f,
                                       .t = t,
                                       .code_form = code_form});
      if (code_form && t < 100) continue;  // bias factor 1/(1 - 0.9^t) still above 1
      for (int i = 0; i < n; ++i) worst = std::max(worst, std::abs(double(p[i]) - before[i]));
    }
    EXPECT_LE(worst, bound * lr * (1 + 1e-5)) << "code_form " << code_form;
    EXPECT_GT(worst, 0.5 * lr) << "the test must drive steps near the bound";
  }
}

TEST(AdamS, HalfOfAdamWsStateAndWeightDecayOnMatricesOnly) {
  const model::ParamLayout layout = small_layout();
  optim::OptimizerConfig cfg;
  cfg.name = "adams";
  cfg.lr = 0.5;
  cfg.weight_decay = 0.1;
  auto opt = optim::make_optimizer(cfg, layout, kernels::cpu_ops());
  EXPECT_STREQ(opt->name(), "adams");
  std::vector<float> params(layout.total(), 2.0f), grads(layout.total(), 0.0f);
  opt->attach(params, grads);
  opt->step({1, cfg.lr});
  for (const auto& view : layout.views())
    for (size_t i = 0; i < view.numel; ++i)
      EXPECT_FLOAT_EQ(params[view.offset + i],
                      view.kind == model::ParamKind::PARAM_KIND_WEIGHT ? 2.0f * (1 - 0.05f) : 2.0f);
  auto state = opt->state();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].name, "adams.m");
  EXPECT_EQ(opt->state_bytes(), layout.total() * sizeof(float));
  optim::OptimizerConfig adamw = cfg;
  adamw.name = "adamw";
  EXPECT_EQ(optim::make_optimizer(adamw, layout, kernels::cpu_ops())->state_bytes(),
            2 * opt->state_bytes());
}

// The ZeRO split: contiguous, covering, balanced to one element, and the bucket overlaps sum to
// the bucket (the counts DataParallel's reduce-scatters use).
TEST(ShardLayout, ContiguousBalancedAndCovering) {
  for (size_t total : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(7248640)}) {
    for (int world : {1, 2, 3, 4, 7}) {
      gossamer::optim::ShardLayout s(total, world);
      ASSERT_EQ(s.world(), world);
      EXPECT_EQ(s.begin(0), 0u);
      EXPECT_EQ(s.end(world - 1), total);
      size_t lo = total, hi = 0, sum = 0;
      for (int r = 0; r < world; ++r) {
        if (r + 1 < world) {
          EXPECT_EQ(s.end(r), s.begin(r + 1));
        }
        EXPECT_EQ(s.size(r), s.end(r) - s.begin(r));
        EXPECT_EQ(s.counts()[size_t(r)], s.size(r));
        lo = std::min(lo, s.size(r));
        hi = std::max(hi, s.size(r));
        sum += s.size(r);
      }
      EXPECT_EQ(sum, total);
      EXPECT_LE(hi - lo, 1u) << total << " over " << world;
      const size_t a = total / 3, b = total - total / 5;
      size_t in = 0;
      for (int r = 0; r < world; ++r) in += s.overlap(r, a, b);
      EXPECT_EQ(in, b - a);
    }
  }
  EXPECT_THROW(gossamer::optim::ShardLayout(10, 0), gossamer::Error);
}

// Per-bucket shards: every element owned exactly once, at a local offset that packs each rank's
// pieces back to back; within every bucket the parts differ by at most one element; a bucket at
// least as large as the space is the contiguous layout.
TEST(ShardLayout, PerBucketOwnedOnceBalancedAndPacked) {
  using gossamer::optim::ShardLayout;
  for (size_t total : {size_t(1), size_t(7), size_t(1000), size_t(100003)}) {
    for (int world : {1, 2, 3, 4, 7}) {
      for (size_t bucket : {size_t(1), size_t(5), size_t(64), size_t(4099), total, total + 9}) {
        const ShardLayout s(total, world, bucket);
        const std::string what = std::to_string(total) + " over " + std::to_string(world) +
                                 " in buckets of " + std::to_string(bucket);
        ASSERT_EQ(s.num_buckets(), (total + std::min(bucket, total) - 1) / std::min(bucket, total))
            << what;
        std::vector<int> owner(total, -1);
        std::vector<std::vector<char>> local_used(static_cast<size_t>(world));
        for (int r = 0; r < world; ++r) local_used[size_t(r)].assign(s.size(r), 0);
        for (size_t b = 0; b < s.num_buckets(); ++b) {
          const std::vector<size_t> c = s.bucket_counts(b);
          const auto [lo, hi] = std::minmax_element(c.begin(), c.end());
          ASSERT_LE(*hi - *lo, 1u) << what << ", bucket " << b;
          for (int r = 0; r < world; ++r) {
            const auto p = s.piece(r, b);
            ASSERT_EQ(p.size(), c[size_t(r)]) << what;
            for (size_t i = p.begin; i < p.end; ++i) {
              ASSERT_EQ(owner[i], -1) << what << ": element " << i << " owned twice";
              owner[i] = r;
              const size_t local = p.local + (i - p.begin);
              ASSERT_LT(local, s.size(r)) << what;
              ASSERT_EQ(local_used[size_t(r)][local]++, 0) << what << ": local offset reused";
              ASSERT_EQ(s.owner(i), r) << what << ": owner(" << i << ")";
              ASSERT_EQ(s.local_offset(i), local) << what;
              ASSERT_EQ(s.global_index(r, local), i) << what << ": global_index";
            }
          }
        }
        for (size_t i = 0; i < total; ++i) ASSERT_NE(owner[i], -1) << what << ": " << i;
        const size_t a = total / 3, b = total - total / 5;
        size_t in = 0;
        for (int r = 0; r < world; ++r) in += s.overlap(r, a, b);
        EXPECT_EQ(in, b - a) << what;
        if (bucket >= total) {
          const ShardLayout one(total, world);
          ASSERT_TRUE(s.contiguous());
          for (int r = 0; r < world; ++r) {
            EXPECT_EQ(s.begin(r), one.begin(r)) << what;
            EXPECT_EQ(s.end(r), one.end(r)) << what;
          }
        }
      }
    }
  }
  EXPECT_THROW(ShardLayout(10, 2, 0), gossamer::Error);
  EXPECT_THROW(ShardLayout(10, 2, 3).begin(0), gossamer::Error);
  EXPECT_THROW(ShardLayout(10, 2, 3).global_index(0, 5), gossamer::Error);
}

// An owned shard's decay runs flag exactly the weight matrices among the owned elements, at
// their local offsets, and its pieces are the layout's non-empty pieces.
TEST(ShardLayout, OwnedRunsFlagWeightsAtTheirLocalOffsets) {
  model::ParamLayout layout;  // 40 views of awkward sizes and alternating kinds
  const model::ParamKind kinds[] = {
      model::ParamKind::PARAM_KIND_WEIGHT, model::ParamKind::PARAM_KIND_BIAS,
      model::ParamKind::PARAM_KIND_WEIGHT, model::ParamKind::PARAM_KIND_WEIGHT,
      model::ParamKind::PARAM_KIND_NORM,   model::ParamKind::PARAM_KIND_EMBEDDING};
  for (int i = 0; i < 40; ++i)
    layout.add(strprintf("v%d", i), {int64_t(1 + (i * 37) % 101)}, kinds[i % 6]);
  const size_t total = layout.total();
  std::vector<char> is_weight(total, 0);
  for (const model::ParamView& v : layout.views())
    if (v.kind == model::ParamKind::PARAM_KIND_WEIGHT)
      std::fill(is_weight.begin() + ptrdiff_t(v.offset),
                is_weight.begin() + ptrdiff_t(v.offset + v.numel), 1);
  for (int world : {1, 3, 4}) {
    for (size_t bucket : {size_t(777), total / 3 + 1, total}) {
      auto shards = std::make_shared<const optim::ShardLayout>(total, world, bucket);
      for (int r = 0; r < world; ++r) {
        const optim::OwnedShard own = optim::OwnedShard::of(shards, r);
        ASSERT_EQ(own.size, shards->size(r));
        std::vector<int> flag(own.size, -1);
        size_t covered = 0;
        for (const optim::OwnedRun& run : optim::owned_runs(layout, own)) {
          for (size_t j = 0; j < run.n; ++j) {
            ASSERT_EQ(flag[run.local + j], -1) << "local " << run.local + j << " in two runs";
            flag[run.local + j] = run.decay;
            ASSERT_EQ(own.global_index(run.local + j), run.begin + j);
            ASSERT_EQ(bool(is_weight[run.begin + j]), run.decay) << "element " << run.begin + j;
          }
          covered += run.n;
        }
        EXPECT_EQ(covered, own.size) << world << " ranks, bucket " << bucket << ", rank " << r;
      }
    }
  }
  const optim::OwnedShard whole = optim::OwnedShard::whole(total);
  EXPECT_TRUE(whole.replicated());
  EXPECT_EQ(whole.size, total);
  EXPECT_EQ(whole.global_index(total - 1), total - 1);
}

// ---- the optimizer seam ------------------------------------------------------------------

TEST(OptimizerRegistry, EveryMethodBuildsAttachesAndSteps) {
  model::ParamLayout layout;  // one block matrix of 32 (2 blocks of 16) for the sparse methods
  layout.add("blocks.0.w", {4, 8}, model::ParamKind::PARAM_KIND_WEIGHT);
  layout.add("blocks.0.b", {3}, model::ParamKind::PARAM_KIND_BIAS);
  layout.add("ln", {2}, model::ParamKind::PARAM_KIND_NORM);
  layout.add("emb", {4, 2}, model::ParamKind::PARAM_KIND_EMBEDDING);
  std::vector<std::string> seen;
  for (const optim::OptimizerEntry& e : optim::optimizer_registry()) {
    SCOPED_TRACE(std::string(e.name));
    EXPECT_EQ(std::count(seen.begin(), seen.end(), std::string(e.name)), 0) << "duplicate name";
    seen.emplace_back(e.name);
    EXPECT_FALSE(e.summary.empty());
    optim::OptimizerConfig cfg;
    cfg.name = std::string(e.name);
    auto opt = optim::make_optimizer(cfg, layout, kernels::cpu_ops(), 10);
    EXPECT_EQ(std::string(opt->name()), e.name);
    EXPECT_FALSE(opt->attached());
    std::vector<float> params(layout.total(), 1.0f), grads(layout.total(), 0.5f);
    expect_error([&] { opt->step({1, 1e-3}); }, {"before attach"});
    opt->attach(params, grads);
    expect_error([&] { opt->attach(params, grads); }, {"attach() called twice"});
    size_t unseen = 0;  // gradients a routing method does not keep (inactive blocks)
    if (opt->routes_block_weight_gradients()) {  // the model hands over the matrix's gradient
      const std::vector<float> g(32, 0.5f);
      opt->routed_gradient_ready(0, g.data());
      unseen = 16;  // density 0.5: one of its two blocks is active
    }
    const double norm = opt->step({1, 1e-3}).grad_norm;
    EXPECT_NEAR(norm, 0.5 * std::sqrt(double(layout.total() - unseen)), 1e-5);
    EXPECT_NE(params[0], 1.0f) << "the step moved nothing";
    for (const optim::StateTensor& t : opt->state()) {
      EXPECT_NE(t.data, nullptr) << t.name;
      EXPECT_GT(t.numel, 0u) << t.name;
    }
  }
  EXPECT_EQ(optim::optimizer_names(), seen);
}

TEST(OptimizerRegistry, SectionsBelongToTheirMethods) {
  optim::OptimizerConfig cfg;  // adamw reads no section
  EXPECT_EQ(cfg.section_unused_reason("scape"),
            "optimizer.name is \"adamw\", which reads no method section");
  cfg.name = "adams";
  EXPECT_EQ(cfg.section_unused_reason("adams"), "");
  EXPECT_EQ(cfg.section_unused_reason("scape"),
            "optimizer.name is \"adams\", which reads only adams");
  cfg.name = "scape";
  EXPECT_EQ(cfg.section_unused_reason("adams"), "");
  EXPECT_EQ(cfg.section_unused_reason("scape"), "");
}

// local_adamw at one rank is AdamW: the same update, the same local clipping, bit for bit; its
// state is per rank (the moments and the replica itself).
TEST(LocalAdamW, OneRankIsAdamWBitForBitWithPerRankState) {
  const model::ParamLayout layout = small_layout();
  optim::OptimizerConfig cfg;
  cfg.lr = 1e-2;
  cfg.grad_clip = 0.5;  // clips: the norm below is larger
  auto adamw = optim::make_optimizer(cfg, layout, kernels::cpu_ops());
  cfg.name = "local_adamw";
  auto local = optim::make_optimizer(cfg, layout, kernels::cpu_ops());
  EXPECT_EQ(local->replicas(), optim::Replicas::REPLICAS_INDEPENDENT);
  EXPECT_EQ(adamw->replicas(), optim::Replicas::REPLICAS_IDENTICAL_EVERY_STEP);
  const size_t n = layout.total();
  std::vector<float> pa(n), pl(n), ga(n), gl(n);
  for (size_t i = 0; i < n; ++i) pa[i] = pl[i] = float(std::sin(0.3 * double(i)));
  adamw->attach(pa, ga);
  local->attach(pl, gl);
  for (int t = 1; t <= 5; ++t) {
    for (size_t i = 0; i < n; ++i) ga[i] = gl[i] = float(std::cos(0.7 * double(i) + t));
    const double na = adamw->step({t, 1e-2}).grad_norm, nl = local->step({t, 1e-2}).grad_norm;
    EXPECT_EQ(na, nl);
  }
  EXPECT_EQ(pa, pl);
  std::vector<float> eval(n);
  EXPECT_FALSE(adamw->evaluation_weights(eval));
  ASSERT_TRUE(local->evaluation_weights(eval));  // the average over one replica
  EXPECT_EQ(eval, pl);
  std::vector<std::string> names;
  for (const optim::StateTensor& t : local->state()) {
    EXPECT_EQ(t.scope, optim::StateScope::STATE_SCOPE_PER_RANK) << t.name;
    names.push_back(t.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"adamw.m", "adamw.v", "local.params"}));
  // NaN gradients stop the step before anything moves.
  gl[3] = std::nanf("");
  const std::vector<float> before = pl;
  expect_error([&] { local->step({6, 1e-2}); }, {"step 6", "non-finite", "rank 0"});
  EXPECT_EQ(pl, before);
}
