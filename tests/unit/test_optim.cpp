// AdamW against values computed by hand from the update formula, weight decay only on
// linear-layer matrices, the registry, and the fused CPU update vs a double reference.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/adamw.h"
#include "kernels/ops.h"
#include "model/param_layout.h"
#include "optim/optimizer.h"

using namespace gossamer;

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
  kernels::cpu::adamw_update(p, g, m, v, 4, 0.1f, 0.9f, 0.95f, 1e-12f, 0.0f, 1);
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
    kernels::cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), n, 1e-2f, 0.9f, 0.95f, 1e-8f,
                               0.1f, t);
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
  opt->step(params, grads, {1, cfg.lr});  // zero gradient: only decay can move a parameter
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
        std::string(e.what()).find("optimizer.name: unknown optimizer \"lion\" (known: adamw)"),
        std::string::npos);
  }
  cfg.name = "adamw";
  cfg.beta2 = 1.0;
  EXPECT_THROW(optim::make_optimizer(cfg, small_layout(), kernels::cpu_ops()), Error);
}
