// The outer updates of diloco, gasloc (mixed_nesterov, zij_literal) and gossip against values
// computed by hand in double from their formulas (docs/GASLOC.md) on 2 ranks, two rounds of one
// local step each; and, at 2, 3 and 4 ranks, a gossip round on one_peer: each rank's vector
// becomes the exact average with the partner that random_matching names (its own when it sits
// out), the round sends 4N bytes per matched rank in one sendrecv call and no all-reduce or
// all-gather. Gradients and weights are multiples of 1/8, so sums and halves are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "kernels/ops.h"
#include "model/param_layout.h"
#include "mpi_test_main.h"
#include "optim/gossip_topology.h"
#include "optim/optimizer.h"
#include "optim/registry.h"

namespace gossamer::comm {
namespace {

using namespace test;

constexpr size_t kN = 12;
constexpr double kLr = 0.01, kB1 = 0.9, kB2 = 0.95, kEps = 1e-8, kOuterLr = 0.5, kMu = 0.5;

model::ParamLayout layout() {
  model::ParamLayout l;
  l.add("w", {3, 4}, model::ParamKind::PARAM_KIND_WEIGHT);
  return l;
}

// Rank r's gradient of element i at step t: a non-zero multiple of 1/8.
double grad_of(size_t i, int rank, int t) {
  const int k = int((i * 5 + size_t(rank) * 7 + size_t(t) * 3) % 11) - 5;
  return (k == 0 ? 3 : k) * 0.125;
}
double x0_of(size_t i) {
  return double(int(i % 7) - 3) * 0.125;
}

// One process's view of one rank: its replica and inner AdamW moments.
struct RankRef {
  std::vector<double> x, m, v;
};

// AdamW (weight decay 0, no clipping) at step t with this rank's gradient, as the kernel
// writes it: bias-corrected moments, eps added to the corrected root.
void inner_step(RankRef& r, int rank, int t) {
  for (size_t i = 0; i < kN; ++i) {
    const double g = grad_of(i, rank, t);
    r.m[i] = kB1 * r.m[i] + (1 - kB1) * g;
    r.v[i] = kB2 * r.v[i] + (1 - kB2) * g * g;
    const double mhat = r.m[i] / (1 - std::pow(kB1, t)), vhat = r.v[i] / (1 - std::pow(kB2, t));
    r.x[i] -= kLr * mhat / (std::sqrt(vhat) + kEps);
  }
}

struct Method {
  const char* name;
  const char* mode;  // gasloc only
};

// Runs two rounds of H = 1 on the optimizer and returns this rank's parameters after each.
std::vector<std::vector<float>> run(const Method& s) {
  Communicator& comm = *g_mpi;
  const model::ParamLayout l = layout();
  optim::OptimizerConfig cfg;
  cfg.name = s.name;
  cfg.lr = kLr, cfg.beta1 = kB1, cfg.beta2 = kB2, cfg.eps = kEps, cfg.weight_decay = 0,
  cfg.grad_clip = 0;
  cfg.diloco.local_steps = {{1}}, cfg.diloco.outer_lr = kOuterLr, cfg.diloco.outer_momentum = kMu;
  cfg.gasloc.local_steps = {{1}}, cfg.gasloc.outer_lr = kOuterLr, cfg.gasloc.outer_momentum = kMu;
  cfg.gasloc.topology = cfg.gossip.topology = optim::GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER;
  if (s.mode && std::string(s.mode) == "zij_literal")
    cfg.gasloc.mode = optim::GaslocMode::GASLOC_MODE_ZIJ_LITERAL;
  const optim::ParallelConfig par;
  auto opt = optim::make_optimizer({cfg, par, l, kernels::cpu_ops(), comm, comm, 1337, 10});
  std::vector<float> x(kN), g(kN);
  for (size_t i = 0; i < kN; ++i) x[i] = float(x0_of(i));
  opt->attach(x, g);
  std::vector<std::vector<float>> out;
  for (int t = 1; t <= 2; ++t) {
    for (size_t i = 0; i < kN; ++i) g[i] = float(grad_of(i, comm.rank(), t));
    opt->step({t, kLr});
    out.push_back(x);
  }
  return out;
}

// The expected parameters of `rank` after rounds 1 and 2, from the formulas.
std::vector<std::vector<double>> expected(const Method& s, int rank) {
  RankRef r[2];
  for (RankRef& k : r)
    k = {std::vector<double>(kN), std::vector<double>(kN, 0.0), std::vector<double>(kN, 0.0)};
  for (size_t i = 0; i < kN; ++i) r[0].x[i] = r[1].x[i] = x0_of(i);
  std::vector<double> anchor[2] = {r[0].x, r[1].x},
                      mom[2] = {std::vector<double>(kN, 0.0), std::vector<double>(kN, 0.0)};
  std::vector<double> yprev[2];
  const std::string name = s.name, mode = s.mode ? s.mode : "";
  std::vector<std::vector<double>> out;
  for (int t = 1; t <= 2; ++t) {
    for (int k = 0; k < 2; ++k) inner_step(r[k], k, t);
    std::vector<double> next[2] = {r[0].x, r[1].x};
    for (size_t i = 0; i < kN; ++i) {
      if (name == "diloco") {  // one all-reduce of the pseudo-gradient, outer Nesterov
        const double delta = ((anchor[0][i] - r[0].x[i]) + (anchor[1][i] - r[1].x[i])) / 2;
        for (int k = 0; k < 2; ++k) {
          mom[k][i] = kMu * mom[k][i] + delta;
          next[k][i] = anchor[k][i] - kOuterLr * (delta + kMu * mom[k][i]);
        }
      } else if (name == "gossip") {
        next[0][i] = next[1][i] = (r[0].x[i] + r[1].x[i]) / 2;
      } else if (mode == "mixed_nesterov") {  // each rank's Nesterov, then the pair's average
        double z[2];
        for (int k = 0; k < 2; ++k) {
          const double delta = anchor[k][i] - r[k].x[i];
          mom[k][i] = kMu * mom[k][i] + delta;
          z[k] = anchor[k][i] - kOuterLr * (delta + kMu * mom[k][i]);
        }
        next[0][i] = next[1][i] = (z[0] + z[1]) / 2;
      } else {  // zij_literal: y = a + lr (x - a); x = mix(y) + gamma (y - y_prev), round 2 on
        double y[2];
        for (int k = 0; k < 2; ++k) y[k] = anchor[k][i] + kOuterLr * (r[k].x[i] - anchor[k][i]);
        for (int k = 0; k < 2; ++k) {
          next[k][i] = 0.5 * y[k] + 0.5 * y[1 - k];
          if (t > 1) next[k][i] += kMu * (y[k] - yprev[k][i]);
        }
        for (int k = 0; k < 2; ++k) {
          if (yprev[k].empty()) yprev[k].assign(kN, 0.0);
          yprev[k][i] = y[k];
        }
      }
    }
    for (int k = 0; k < 2; ++k) r[k].x = anchor[k] = next[k];
    out.push_back(r[rank].x);
  }
  return out;
}

TEST(OuterUpdates, TwoRanksMatchTheHandComputedFormulas) {
  Communicator& comm = *g_mpi;
  if (comm.size() != 2) GTEST_SKIP() << "SKIPPED: the hand-computed values are for 2 ranks";
  for (const Method& s : {Method{"diloco", nullptr}, Method{"gasloc", "mixed_nesterov"},
                          Method{"gasloc", "zij_literal"}, Method{"gossip", nullptr}}) {
    const std::string what = std::string(s.name) + (s.mode ? std::string(" ") + s.mode : "");
    const CommStats before = comm.stats();
    const auto got = run(s);
    const CommStats d = comm.stats().since(before);
    const auto want = expected(s, comm.rank());
    for (int round = 0; round < 2; ++round) {
      size_t wrong = 0;
      for (size_t i = 0; i < kN; ++i)
        wrong += std::fabs(got[size_t(round)][i] - want[size_t(round)][i]) >
                 1e-6 * std::max(1.0, std::fabs(want[size_t(round)][i]));
      EXPECT_EQ(wrong, 0u) << what << ", round " << round + 1 << ", rank " << comm.rank();
    }
    // Replicas after round 2: identical except zij_literal (its momentum term is not mixed).
    std::vector<float> theirs(kN);
    comm.sendrecv(got[1].data(), kN, 1 - comm.rank(), theirs.data(), kN, 1 - comm.rank(),
                  DType::F32)
        .wait();
    const bool same = std::memcmp(theirs.data(), got[1].data(), kN * sizeof(float)) == 0;
    EXPECT_EQ(same, !(s.mode && std::string(s.mode) == "zij_literal")) << what;
    // Bytes: diloco one all-reduce of N floats per round (2(k-1)/k x 4N = 4N at 2 ranks); the
    // gossip methods one sendrecv of 4N per round and nothing else.
    const bool gossip = std::string(s.name) != "diloco";
    EXPECT_EQ(d[Kind::ALL_REDUCE].bytes_sent, gossip ? 0 : int64_t(2 * 4 * kN)) << what;
    EXPECT_EQ(d[Kind::SENDRECV].calls, gossip ? 2 : 0) << what;
    EXPECT_EQ(d[Kind::SENDRECV].bytes_sent, gossip ? int64_t(2 * 4 * kN) : 0) << what;
    EXPECT_EQ(d[Kind::ALL_GATHER].calls, 0) << what;
  }
}

// A gossip round at any world size: the exact average with the matched partner.
TEST(OuterUpdates, GossipRoundAveragesWithTheMatchedPartnerOnly) {
  Communicator& comm = *g_mpi;
  const int rank = comm.rank();
  const model::ParamLayout l = layout();
  optim::OptimizerConfig cfg;
  cfg.name = "gossip";
  cfg.weight_decay = 0, cfg.grad_clip = 0;
  cfg.gossip.topology = optim::GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER;
  const optim::ParallelConfig par;
  auto opt = optim::make_optimizer({cfg, par, l, kernels::cpu_ops(), comm, comm, 99, 10});
  auto coded = [](int r, size_t i) { return float(r * 16 + int(i)) * 0.125f; };
  std::vector<float> x(kN), g(kN, 0.0f);  // zero gradients: the inner AdamW step moves nothing
  for (size_t i = 0; i < kN; ++i) x[i] = coded(rank, i);
  opt->attach(x, g);
  for (int t = 1; t <= 3; ++t) {
    const std::vector<float> before_x = x;
    const CommStats before = comm.stats();
    opt->step({t, 0.01});
    const CommStats d = comm.stats().since(before);
    const int partner = optim::random_matching(comm.size(), 99, t, 0)[size_t(rank)];
    // The partner's vector before this round, by the same coding as this rank's history.
    std::vector<float> theirs(kN);
    if (partner >= 0)
      comm.sendrecv(before_x.data(), kN, partner, theirs.data(), kN, partner, DType::F32).wait();
    size_t wrong = 0;
    for (size_t i = 0; i < kN; ++i) {
      const float want = partner < 0 ? before_x[i] : 0.5f * before_x[i] + 0.5f * theirs[i];
      wrong += x[i] != want;
    }
    EXPECT_EQ(wrong, 0u) << "round " << t << ", rank " << rank << ", partner " << partner;
    EXPECT_EQ(d[Kind::SENDRECV].bytes_sent, partner < 0 ? 0 : int64_t(4 * kN)) << "round " << t;
    EXPECT_EQ(d[Kind::SENDRECV].calls, partner < 0 ? 0 : 1) << "round " << t;
    EXPECT_EQ(d[Kind::ALL_REDUCE].calls + d[Kind::ALL_GATHER].calls, 0) << "round " << t;
  }
}

}  // namespace
}  // namespace gossamer::comm

int main(int argc, char** argv) {
  return gossamer::comm::test::run_all_ranks(argc, argv);
}
