// GASLoC's outer updates at 3 and 4 ranks in one process (optim/gasloc.h, docs/GASLOC.md),
// against values computed here in double from the formulas, with each round's mixing matrix W
// built from the ranks' exchange lists (gossip_topology.h): the modes accelerated,
// mixed_nesterov and zij_literal, and gossip, on a 3-rank ring with alpha = 1/4 (not an exact
// average) and on random one-peer matchings (one rank sits out each round), over 3 rounds with
// one local step and with per-rank local steps, the first round included. On these graphs the
// accelerated and mixed_nesterov references differ, so a momentum that misses the gossip
// correction fails the accelerated case. On the complete graph at 4 ranks: the accelerated
// mode's general mixing path equals DiLoCo within 1e-6 relative over 6 rounds; mixed_nesterov's
// general path (complete_fast_path false) equals its fast path within 1e-6, and the fast path
// equals DiLoCo bit for bit. mix_momentum (gossip, mixed_nesterov) against its formula, and
// the average of the replicas it leaves untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "adamw_reference.h"
#include "comm/inprocess_communicator.h"
#include "core/enum_names.h"
#include "kernels/ops.h"
#include "model/param_layout.h"
#include "optim/gossip_topology.h"
#include "optim/local_steps_config.h"
#include "optim/optimizer.h"
#include "optim/registry.h"

namespace {

using namespace gossamer;
using optim::GaslocMode;
using optim::GossipTopology;

constexpr double kLr = 0.01, kB1 = 0.9, kB2 = 0.95, kEps = 1e-8, kOuterLr = 0.7, kGamma = 0.6;
constexpr uint64_t kSeed = 4242;
constexpr double kScale = 1.0 / 8;  // the weights' magnitude, the floor of relative errors

model::ParamLayout tiny_layout() {
  model::ParamLayout l;
  l.add("wte", {3, 4}, model::ParamKind::PARAM_KIND_EMBEDDING);
  l.add("fc.weight", {4, 3}, model::ParamKind::PARAM_KIND_WEIGHT);
  l.add("fc.bias", {3}, model::ParamKind::PARAM_KIND_BIAS);
  return l;
}

// The first weights, the same on every rank, and rank r's gradient of element i at update t:
// multiples of 1/64 that differ between ranks and steps.
double x0_of(size_t i) {
  return double(int((i * 5) % 17) - 8) / 64;
}
double grad_of(size_t i, int rank, int64_t t) {
  return double(int((i * 7 + size_t(rank) * 5 + size_t(t) * 3) % 11) - 5) / 64 * (1 + rank % 2);
}

enum class Method { DILOCO, ACCELERATED, MIXED_NESTEROV, ZIJ_LITERAL, GOSSIP };

struct Case {
  std::string label;
  Method method;
  GossipTopology topology;
  std::vector<int64_t> local_steps;  // one value, or one per rank
  double gossip_weight;              // configured alpha (0: the default)
  int world, rounds;
  bool fast_path = true;    // optimizer.gasloc.complete_fast_path
  double mix_momentum = 0;  // beta of optimizer.gasloc/gossip.mix_momentum
};

int64_t steps_of(const Case& c, int rank) {
  return c.local_steps.size() == 1 ? c.local_steps[0] : c.local_steps[size_t(rank)];
}
int64_t slots_of(const Case& c) {
  return *std::max_element(c.local_steps.begin(), c.local_steps.end());
}

// Every rank's parameters after every update: [t - 1][rank][i].
using Trajectory = std::vector<std::vector<std::vector<double>>>;

// ---- the library, each rank a thread ------------------------------------------------------------

Trajectory run_library(const Case& c) {
  const model::ParamLayout layout = tiny_layout();
  const size_t n = layout.total();
  const int64_t updates = c.rounds * slots_of(c);
  Trajectory out(size_t(updates), std::vector<std::vector<double>>(size_t(c.world)));
  auto comms = comm::make_inprocess_communicators(c.world);
  std::vector<std::string> errors(size_t(c.world));
  std::vector<std::thread> threads;
  for (int r = 0; r < c.world; ++r)
    threads.emplace_back([&, r] {
      try {
        comm::Communicator& comm = *comms[size_t(r)];
        optim::OptimizerConfig cfg;
        cfg.name = c.method == Method::DILOCO   ? "diloco"
                   : c.method == Method::GOSSIP ? "gossip"
                                                : "gasloc";
        cfg.lr = kLr, cfg.beta1 = kB1, cfg.beta2 = kB2, cfg.eps = kEps;
        cfg.weight_decay = 0, cfg.grad_clip = 0;
        const optim::LocalSteps steps{c.local_steps};
        cfg.diloco.local_steps = cfg.gasloc.local_steps = cfg.gossip.local_steps = steps;
        cfg.diloco.outer_lr = cfg.gasloc.outer_lr = kOuterLr;
        cfg.diloco.outer_momentum = cfg.gasloc.outer_momentum = kGamma;
        cfg.gasloc.topology = cfg.gossip.topology = c.topology;
        cfg.gasloc.gossip_weight = cfg.gossip.gossip_weight = c.gossip_weight;
        cfg.gasloc.complete_fast_path = c.fast_path;
        optim::GossipGraph& graph = c.method == Method::GOSSIP
                                        ? static_cast<optim::GossipGraph&>(cfg.gossip)
                                        : static_cast<optim::GossipGraph&>(cfg.gasloc);
        graph.mix_momentum = c.mix_momentum;
        cfg.gasloc.mode = c.method == Method::MIXED_NESTEROV
                              ? GaslocMode::GASLOC_MODE_MIXED_NESTEROV
                          : c.method == Method::ZIJ_LITERAL ? GaslocMode::GASLOC_MODE_ZIJ_LITERAL
                                                            : GaslocMode::GASLOC_MODE_ACCELERATED;
        const optim::ParallelConfig par;
        auto opt =
            optim::make_optimizer({cfg, par, layout, kernels::cpu_ops(), comm, comm, kSeed, 100});
        std::vector<float> x(n), g(n);
        for (size_t i = 0; i < n; ++i) x[i] = float(x0_of(i));
        opt->attach(x, g);
        for (int64_t t = 1; t <= updates; ++t) {
          for (size_t i = 0; i < n; ++i) g[i] = float(grad_of(i, r, t));
          opt->step({t, kLr});
          out[size_t(t - 1)][size_t(r)].assign(x.begin(), x.end());
        }
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < c.world; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
  return out;
}

// ---- the formulas, in double --------------------------------------------------------------------

struct RefRank {
  std::vector<double> x, m, v, anchor, mom, y_prev, correction;
};

// AdamW with weight decay 0 and no clipping at the rank's own step count s.
void inner_step(RefRank& k, int rank, int64_t t, int64_t s) {
  gossamer::testing::adamw_reference_step(k.x, k.m, k.v, s, {kLr, kB1, kB2, kEps},
                                          [&](size_t i) { return grad_of(i, rank, t); });
}

// W of round `round` (1-based, as the optimizer numbers them): rank k keeps 1 - alpha deg_k of
// its own vector and takes alpha of each vector it receives.
std::vector<std::vector<double>> mixing_matrix(const Case& c, int64_t round) {
  const int P = c.world;
  const double alpha = optim::gossip_weight(c.topology, P, c.gossip_weight);
  std::vector<std::vector<double>> W(size_t(P), std::vector<double>(size_t(P), 0.0));
  for (int k = 0; k < P; ++k) {
    if (c.topology == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE) {
      for (int j = 0; j < P; ++j) W[size_t(k)][size_t(j)] = j == k ? 1 - alpha * (P - 1) : alpha;
      continue;
    }
    const auto ex = optim::round_exchanges(c.topology, P, k, kSeed, round);
    W[size_t(k)][size_t(k)] = 1 - alpha * double(ex.size());
    for (const optim::GossipExchange& e : ex) W[size_t(k)][size_t(e.recv_from)] += alpha;
  }
  return W;
}

Trajectory reference(const Case& c) {
  const size_t n = tiny_layout().total();
  const int P = c.world;
  std::vector<RefRank> r(static_cast<size_t>(P));
  for (RefRank& k : r) {
    k.x.resize(n);
    for (size_t i = 0; i < n; ++i) k.x[i] = x0_of(i);
    k.m.assign(n, 0.0), k.v.assign(n, 0.0), k.mom.assign(n, 0.0), k.correction.assign(n, 0.0);
    k.anchor = k.y_prev = k.x;  // y_prev before round 1: the first weights
  }
  const int64_t slots = slots_of(c);
  Trajectory out;
  for (int64_t t = 1; t <= c.rounds * slots; ++t) {
    const int64_t round = (t - 1) / slots, slot = (t - 1) % slots;
    for (int k = 0; k < P; ++k)
      if (slot < steps_of(c, k)) inner_step(r[size_t(k)], k, t, round * steps_of(c, k) + slot + 1);
    if (t % slots == 0) {
      const auto W = mixing_matrix(c, t / slots);
      const auto mix = [&](const std::vector<double>& v, int k) {
        double s = 0;
        for (int j = 0; j < P; ++j) s += W[size_t(k)][size_t(j)] * v[size_t(j)];
        return s;
      };
      for (size_t i = 0; i < n; ++i) {
        std::vector<double> y(static_cast<size_t>(P)), z(static_cast<size_t>(P));
        for (int k = 0; k < P; ++k) {
          RefRank& q = r[size_t(k)];
          y[size_t(k)] = q.anchor[i] + kOuterLr * (q.x[i] - q.anchor[i]);
          if (c.method == Method::ACCELERATED) {
            z[size_t(k)] = (1 + kGamma) * y[size_t(k)] - kGamma * q.y_prev[i];
          } else if (c.method == Method::MIXED_NESTEROV) {
            const double delta = q.anchor[i] - q.x[i];
            q.mom[i] = kGamma * q.mom[i] + delta;
            z[size_t(k)] = q.anchor[i] - kOuterLr * (delta + kGamma * q.mom[i]);
          } else if (c.method == Method::GOSSIP) {
            z[size_t(k)] = q.x[i];
          } else {  // zij_literal and diloco use y (diloco: below)
            z[size_t(k)] = y[size_t(k)];
          }
        }
        if (c.method == Method::DILOCO) {
          double delta = 0;
          for (const RefRank& q : r) delta += (q.anchor[i] - q.x[i]) / P;
          for (RefRank& q : r) {
            q.mom[i] = kGamma * q.mom[i] + delta;
            q.x[i] = q.anchor[i] = q.anchor[i] - kOuterLr * (delta + kGamma * q.mom[i]);
          }
          continue;
        }
        for (int k = 0; k < P; ++k) {
          RefRank& q = r[size_t(k)];
          double next = mix(z, k);
          if (c.method == Method::ZIJ_LITERAL) next += kGamma * (y[size_t(k)] - q.y_prev[i]);
          // mix_momentum: + beta (W z - z + c), c <- x - z
          next += c.mix_momentum * (next - z[size_t(k)] + q.correction[i]);
          q.correction[i] = next - z[size_t(k)];
          q.x[i] = next;
          if (c.method != Method::GOSSIP) q.anchor[i] = next;
          q.y_prev[i] = y[size_t(k)];
        }
      }
    }
    std::vector<std::vector<double>> now;
    for (const RefRank& q : r) now.push_back(q.x);
    out.push_back(now);
  }
  return out;
}

// Elements of `got` further than 1e-6 relative (or 1e-6 of kScale when smaller) from `want`.
size_t count_off(const Trajectory& got, const Trajectory& want, int64_t update, double* worst) {
  size_t off = 0;
  for (size_t r = 0; r < want[size_t(update)].size(); ++r)
    for (size_t i = 0; i < want[size_t(update)][r].size(); ++i) {
      const double g = got[size_t(update)][r][i], w = want[size_t(update)][r][i];
      const double err = std::fabs(g - w);
      *worst = std::max(*worst, err / std::max(std::fabs(w), kScale));
      off += err > 1e-6 * std::max(std::fabs(w), kScale);
    }
  return off;
}

void expect_matches(const Trajectory& got, const Trajectory& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (int64_t u = 0; u < int64_t(want.size()); ++u) {
    double worst = 0;
    EXPECT_EQ(count_off(got, want, u, &worst), 0u)
        << what << ": update " << u + 1 << ", largest relative error " << worst;
  }
}

constexpr GossipTopology kRing = GossipTopology::GOSSIP_TOPOLOGY_RING,
                         kOnePeer = GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER,
                         kComplete = GossipTopology::GOSSIP_TOPOLOGY_COMPLETE;

TEST(GaslocRounds, EveryModeMatchesItsFormulaOnThreeRanks) {
  const Method methods[] = {Method::ACCELERATED, Method::MIXED_NESTEROV, Method::ZIJ_LITERAL,
                            Method::GOSSIP};
  const char* names[] = {"accelerated", "mixed_nesterov", "zij_literal", "gossip"};
  for (int m = 0; m < 4; ++m) {
    const std::vector<Case> cases = {
        {std::string(names[m]) + " ring alpha 1/4 H=1", methods[m], kRing, {1}, 0.25, 3, 3},
        {std::string(names[m]) + " one_peer H=[1,2,1]", methods[m], kOnePeer, {1, 2, 1}, 0, 3, 3},
    };
    for (const Case& c : cases) expect_matches(run_library(c), reference(c), c.label);
  }
}

// mix_momentum with gossip and mixed_nesterov, on the same graphs: the momentum term and the
// correction against their formula (a beta that also moved the mean, or a correction not kept
// across rounds, fails it).
TEST(GaslocRounds, MixMomentumMatchesItsFormulaOnThreeRanks) {
  for (Method m : {Method::GOSSIP, Method::MIXED_NESTEROV}) {
    const std::string name = m == Method::GOSSIP ? "gossip" : "mixed_nesterov";
    std::vector<Case> cases = {
        {name + " mix_momentum 0.5 ring alpha 1/4 H=1", m, kRing, {1}, 0.25, 3, 4},
        {name + " mix_momentum 0.5 one_peer H=[1,2,1]", m, kOnePeer, {1, 2, 1}, 0, 3, 4},
    };
    for (Case& c : cases) {
      c.mix_momentum = 0.5;
      expect_matches(run_library(c), reference(c), c.label);
    }
  }
}

// The gradients here do not depend on the weights, so the average of the replicas does not
// depend on how they mix: with and without mix_momentum it is the same at every update, while
// the replicas themselves differ from round 2 on. (A momentum of the form W[(1 + beta) z - beta
// z_prev] would move the average.)
TEST(GaslocRounds, MixMomentumLeavesTheAverageOfTheReplicasUntouched) {
  const auto average = [](const Trajectory& t, size_t u) {
    std::vector<double> a(t[u][0].size(), 0.0);
    for (const auto& rank : t[u])
      for (size_t i = 0; i < a.size(); ++i) a[i] += rank[i] / double(t[u].size());
    return Trajectory{{a}};
  };
  for (Method m : {Method::GOSSIP, Method::MIXED_NESTEROV}) {
    Case plain{"plain", m, kRing, {1}, 0.25, 3, 4};
    Case fast = plain;
    fast.mix_momentum = 0.6;
    const Trajectory a = run_library(plain), b = run_library(fast);
    for (size_t u = 0; u < a.size(); ++u) {
      double worst = 0;
      EXPECT_EQ(count_off(average(b, u), average(a, u), 0, &worst), 0u)
          << "update " << u + 1 << ": the average moved, largest relative error " << worst;
      if (u == 0) continue;
      worst = 0;
      EXPECT_GT(count_off(b, a, int64_t(u), &worst), 0u) << "update " << u + 1;
    }
  }
}

// The accelerated case above can fail: on the same graph, a momentum applied before the mixing
// to each rank's own pseudo-gradient (mixed_nesterov) gives other weights from round 2 on (round
// 1 is the same step from rest: z = anchor - (1 + gamma) lr_out delta in both).
TEST(GaslocRounds, AcceleratedAndMixedNesterovDifferOnAnInexactMix) {
  for (GossipTopology topo : {kRing, kOnePeer}) {
    Case acc{"accelerated", Method::ACCELERATED, topo, {1}, topo == kRing ? 0.25 : 0, 3, 3};
    Case mixed = acc;
    mixed.method = Method::MIXED_NESTEROV;
    const Trajectory a = reference(acc), b = reference(mixed);
    double worst = 0;
    EXPECT_EQ(count_off(a, b, 0, &worst), 0u) << enum_name(topo) << ": round 1";
    for (int64_t u : {1, 2}) {
      worst = 0;
      EXPECT_GT(count_off(a, b, u, &worst), 0u) << enum_name(topo) << ": round " << u + 1;
      EXPECT_GT(worst, 1e-3) << enum_name(topo) << ": round " << u + 1;
    }
  }
}

// The complete graph with exact averaging, through the general mixing path: the accelerated
// mode is DiLoCo's Nesterov step (docs/GASLOC.md), equal to rounding, at every round end.
TEST(GaslocRounds, AcceleratedOnTheCompleteGraphEqualsDiloco) {
  const Case acc{"accelerated complete", Method::ACCELERATED, kComplete, {2}, 0, 4, 6};
  Case diloco = acc;
  diloco.method = Method::DILOCO;
  const Trajectory a = run_library(acc), d = run_library(diloco);
  expect_matches(a, d, "accelerated (library) vs diloco (library)");
  expect_matches(a, reference(diloco), "accelerated (library) vs diloco's formula");
}

TEST(GaslocRounds, MixedNesterovFastPathEqualsTheGeneralPathAndDilocoBitForBit) {
  Case fast{"mixed_nesterov complete", Method::MIXED_NESTEROV, kComplete, {2}, 0, 4, 6};
  Case general = fast;
  general.fast_path = false;
  Case diloco = fast;
  diloco.method = Method::DILOCO;
  const Trajectory f = run_library(fast), g = run_library(general), d = run_library(diloco);
  expect_matches(g, f, "general path vs fast path");
  size_t differ = 0;
  for (size_t u = 0; u < f.size(); ++u)
    for (size_t r = 0; r < f[u].size(); ++r)
      for (size_t i = 0; i < f[u][r].size(); ++i) differ += f[u][r][i] != d[u][r][i];
  EXPECT_EQ(differ, 0u) << "the fast path is not diloco bit for bit";
}

}  // namespace
