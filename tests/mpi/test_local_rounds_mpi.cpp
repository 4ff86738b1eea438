// Rounds of local steps across 2, 3 and 4 ranks (optim/local_rounds.h, diloco.h, gasloc.h,
// gossip_topology.h). Every rank derives the gossip graph alone: all-gathered, the ranks' own
// exchange lists of 1000 rounds form one consistent graph (a sends to b exactly when b receives
// from a; matchings pair every rank but world % 2 with another, never itself) and the random
// matchings agree bit for bit on every rank and vary from round to round. On 2 ranks, diloco,
// gasloc (accelerated, mixed_nesterov, zij_literal; one_peer, ring, two_peer, complete) and
// gossip, with one
// local step and with per-rank local steps, match after every update the values computed by hand
// in double from the formulas (docs/GASLOC.md) within 1e-6 relative, with no message between
// round ends, and their replicas are bit-identical at round ends exactly when the method averages
// exactly. At every size a gasloc round sends 4N bytes per exchange of the round (one_peer: 4N,
// or 0 when sitting out; ring: 8N) in one sendrecv call and no global collective, and mixes as
// the graph says. Weights and gradients are multiples of 1/64; wrong elements are counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "../unit/adamw_reference.h"
#include "comm/communicator.h"
#include "core/enum_names.h"
#include "kernels/ops.h"
#include "model/param_layout.h"
#include "mpi_test_main.h"
#include "optim/gossip_topology.h"
#include "optim/local_steps_config.h"
#include "optim/optimizer.h"
#include "optim/registry.h"

namespace gossamer::comm {
namespace {

using namespace test;
using optim::GossipExchange;
using optim::GossipTopology;

constexpr uint64_t kSeed = 1337;
constexpr int64_t kRounds = 1000;

std::string topo_name(GossipTopology t) {
  return std::string(enum_name(t));
}

// ---- 1. the gossip graph every rank derives alone ----------------------------------------------

// Every rank's own exchanges of rounds 0..kRounds-1, all-gathered: one record per (rank, round),
// the count then `slots` (send_to, recv_from) pairs, -1 past the count.
class GatheredExchanges {
 public:
  GatheredExchanges(Communicator& comm, GossipTopology topo)
      : world_(comm.size()), slots_(std::max(1, optim::max_in_degree(topo, world_))) {
    const size_t per_rank = size_t(kRounds) * record();
    std::vector<int32_t> mine(per_rank, -1);
    for (int64_t round = 0; round < kRounds; ++round) {
      const std::vector<GossipExchange> ex =
          optim::round_exchanges(topo, world_, comm.rank(), kSeed, round);
      int32_t* rec = mine.data() + size_t(round) * record();
      rec[0] = int32_t(ex.size());
      for (size_t e = 0; e < ex.size() && e < size_t(slots_); ++e) {
        rec[1 + 2 * e] = ex[e].send_to;
        rec[2 + 2 * e] = ex[e].recv_from;
      }
    }
    all_.resize(per_rank * size_t(world_));
    const std::vector<size_t> counts(size_t(world_), per_rank);
    comm.all_gather(mine.data(), all_.data(), counts, DType::I32).wait();
  }

  // The count rank r reported (may exceed slots(): then only slots() were kept).
  int count(int rank, int64_t round) const { return rec(rank, round)[0]; }
  std::vector<GossipExchange> at(int rank, int64_t round) const {
    const int32_t* r = rec(rank, round);
    std::vector<GossipExchange> out;
    for (int e = 0; e < std::min(r[0], int32_t(slots_)); ++e)
      out.push_back({r[1 + 2 * e], r[2 + 2 * e]});
    return out;
  }

 private:
  size_t record() const { return 1 + 2 * size_t(slots_); }
  const int32_t* rec(int rank, int64_t round) const {
    return all_.data() + (size_t(rank) * size_t(kRounds) + size_t(round)) * record();
  }

  int world_, slots_;
  std::vector<int32_t> all_;
};

// Wrong entries in one round's graph, whatever the topology: every listed peer is another valid
// rank, sources and destinations are not repeated, and a sends to b exactly once when b receives
// from a exactly once (and the reverse).
int graph_errors(const GatheredExchanges& g, int world, int64_t round, int max_degree) {
  int wrong = 0;
  std::vector<std::vector<GossipExchange>> ex;
  for (int r = 0; r < world; ++r) ex.push_back(g.at(r, round));
  for (int a = 0; a < world; ++a) {
    wrong += g.count(a, round) > max_degree;
    std::set<int> dests, sources;
    for (const GossipExchange& x : ex[size_t(a)]) {
      const bool valid = x.send_to >= 0 && x.send_to < world && x.recv_from >= 0 &&
                         x.recv_from < world && x.send_to != a && x.recv_from != a;
      wrong += !valid;
      if (!valid) continue;
      wrong += !dests.insert(x.send_to).second;
      wrong += !sources.insert(x.recv_from).second;
      int received = 0, sent = 0;
      for (const GossipExchange& y : ex[size_t(x.send_to)]) received += y.recv_from == a;
      for (const GossipExchange& y : ex[size_t(x.recv_from)]) sent += y.send_to == a;
      wrong += received != 1;
      wrong += sent != 1;
    }
  }
  return wrong;
}

// FNV-1a over every random matching of rounds 0..kRounds-1 (both of two_peer's).
uint64_t matchings_hash(int world, uint64_t seed) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](int64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= uint64_t(v >> (8 * b)) & 0xFF;
      h *= 1099511628211ull;
    }
  };
  for (int64_t round = 0; round < kRounds; ++round)
    for (int which = 0; which < 2; ++which)
      for (int p : optim::random_matching(world, seed, round, which)) mix(p);
  return h;
}

// The number of maximum matchings of the complete graph on n vertices: (n-1)!! for even n,
// n (n-2)!! for odd n (which rank sits out, then a perfect matching of the rest).
int64_t matchings_of(int n) {
  int64_t c = n % 2 ? n : 1;
  for (int k = (n % 2 ? n - 2 : n - 1); k > 1; k -= 2) c *= k;
  return c;
}

TEST(LocalRoundsTopology, FixedGraphsAreConsistentOnEveryRank) {
  Communicator& comm = *g_mpi;
  const int world = comm.size();
  for (GossipTopology topo :
       {GossipTopology::GOSSIP_TOPOLOGY_RING, GossipTopology::GOSSIP_TOPOLOGY_EXPONENTIAL}) {
    const GatheredExchanges g(comm, topo);
    const int degree = optim::max_in_degree(topo, world);
    int wrong = 0, positional = 0, changed = 0;
    for (int64_t round = 0; round < kRounds; ++round) {
      wrong += graph_errors(g, world, round, degree);
      for (int a = 0; a < world; ++a) {
        const std::vector<GossipExchange> ex = g.at(a, round);
        // A fixed graph has its largest degree at every rank and does not depend on the round.
        wrong += int(ex.size()) != degree;
        const std::vector<GossipExchange> first = g.at(a, 0);
        for (size_t e = 0; e < ex.size() && e < first.size(); ++e)
          changed += ex[e].send_to != first[e].send_to || ex[e].recv_from != first[e].recv_from;
        // Exchange e of a pairs with exchange e of its peers: the same shift.
        for (size_t e = 0; e < ex.size(); ++e) {
          const std::vector<GossipExchange> to = g.at(ex[e].send_to, round);
          const std::vector<GossipExchange> from = g.at(ex[e].recv_from, round);
          positional += e >= to.size() || to[e].recv_from != a;
          positional += e >= from.size() || from[e].send_to != a;
        }
      }
    }
    EXPECT_EQ(wrong, 0) << topo_name(topo) << " at " << world << " ranks, rank " << comm.rank();
    EXPECT_EQ(positional, 0) << topo_name(topo) << " at " << world << " ranks";
    EXPECT_EQ(changed, 0) << topo_name(topo) << ": a fixed graph changed between rounds";
    if (topo == GossipTopology::GOSSIP_TOPOLOGY_RING && world >= 3) {
      EXPECT_EQ(degree, 2);
    }
  }
  // The complete graph is one all-reduce: no exchange at any round.
  int listed = 0;
  for (int64_t round = 0; round < kRounds; ++round)
    listed += int(optim::round_exchanges(GossipTopology::GOSSIP_TOPOLOGY_COMPLETE, world,
                                         comm.rank(), kSeed, round)
                      .size());
  EXPECT_EQ(listed, 0);
}

TEST(LocalRoundsTopology, RandomMatchingsAreConsistentIdenticalAndVary) {
  Communicator& comm = *g_mpi;
  const int world = comm.size(), rank = comm.rank();
  // one_peer: each rank's own list is its partner in this rank's random_matching of the round.
  {
    const GatheredExchanges g(comm, GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER);
    int wrong = 0, not_perfect = 0, differs = 0;
    std::set<std::vector<int>> distinct;
    int64_t changes = 0;
    std::vector<int> prev;
    for (int64_t round = 0; round < kRounds; ++round) {
      wrong += graph_errors(g, world, round, 1);
      std::vector<int> partner(size_t(world), -1);
      for (int a = 0; a < world; ++a) {
        const std::vector<GossipExchange> ex = g.at(a, round);
        wrong += g.count(a, round) > 1;
        if (ex.empty()) continue;
        wrong += ex[0].send_to != ex[0].recv_from;  // a pair swaps vectors: one exchange
        partner[size_t(a)] = ex[0].send_to;
      }
      int alone = 0;
      for (int a = 0; a < world; ++a) {
        const int p = partner[size_t(a)];
        if (p < 0) {
          ++alone;
          continue;
        }
        not_perfect += p == a || partner[size_t(p)] != a;
      }
      not_perfect += alone != world % 2;
      const std::vector<int> local = optim::random_matching(world, kSeed, round, 0);
      differs += partner != local;
      distinct.insert(local);
      if (!prev.empty()) changes += local != prev;
      prev = local;
    }
    EXPECT_EQ(wrong, 0) << "one_peer at " << world << " ranks, rank " << rank;
    EXPECT_EQ(not_perfect, 0) << "one_peer: not a matching of all but world % 2 ranks";
    EXPECT_EQ(differs, 0) << "one_peer: rounds where the ranks' own partners are not this rank's "
                          << rank << " random_matching";
    // Over 1000 draws every maximum matching appears (3 at 3 and 4 ranks, 1 at 2).
    EXPECT_EQ(int64_t(distinct.size()), matchings_of(world)) << world << " ranks";
    if (world >= 3) {
      EXPECT_GT(changes, 0) << "the same matching for all " << kRounds << " rounds";
    }
  }
  // two_peer: each rank's list is its partners in the round's two matchings, one exchange when
  // they name the same rank; each listed peer lists this rank back.
  {
    const GatheredExchanges g(comm, GossipTopology::GOSSIP_TOPOLOGY_TWO_PEER);
    const int degree = optim::max_in_degree(GossipTopology::GOSSIP_TOPOLOGY_TWO_PEER, world);
    int wrong = 0, differs = 0, not_symmetric = 0;
    int64_t two_different = 0;
    for (int64_t round = 0; round < kRounds; ++round) {
      wrong += graph_errors(g, world, round, degree);
      const std::vector<int> m0 = optim::random_matching(world, kSeed, round, 0);
      const std::vector<int> m1 = optim::random_matching(world, kSeed, round, 1);
      two_different += m0 != m1;
      for (int a = 0; a < world; ++a) {
        std::vector<int> want;
        if (m0[size_t(a)] >= 0) want.push_back(m0[size_t(a)]);
        if (m1[size_t(a)] >= 0 && m1[size_t(a)] != m0[size_t(a)]) want.push_back(m1[size_t(a)]);
        const std::vector<GossipExchange> ex = g.at(a, round);
        std::vector<int> got;
        for (const GossipExchange& x : ex) {
          wrong += x.send_to != x.recv_from;
          got.push_back(x.send_to);
          int back = 0;
          for (const GossipExchange& y : g.at(x.send_to, round)) back += y.send_to == a;
          not_symmetric += back != 1;
        }
        differs += got != want;
      }
    }
    EXPECT_EQ(wrong, 0) << "two_peer at " << world << " ranks, rank " << rank;
    EXPECT_EQ(not_symmetric, 0) << "two_peer: a listed peer does not list this rank back";
    EXPECT_EQ(differs, 0) << "two_peer: lists differ from this rank's " << rank
                          << " random_matching pair";
    if (world >= 3) {
      EXPECT_GT(two_different, 0) << "two_peer's two matchings are always the same";
    }
  }
  // Every rank's random_matching of every round is the same: equal hashes.
  const int64_t mine = int64_t(matchings_hash(world, kSeed));
  std::vector<int64_t> all(static_cast<size_t>(world));
  const std::vector<size_t> ones(size_t(world), 1);
  comm.all_gather(&mine, all.data(), ones, DType::I64).wait();
  int unequal = 0;
  for (int64_t h : all) unequal += h != all[0];
  EXPECT_EQ(unequal, 0) << "ranks whose random matchings differ from rank 0's";
  if (world >= 3) {
    EXPECT_NE(matchings_hash(world, kSeed + 1), uint64_t(mine)) << "the seed changes nothing";
  }
}

// ---- 2. the outer updates on 2 ranks, by hand ---------------------------------------------------

constexpr double kLr = 0.01, kB1 = 0.9, kB2 = 0.95, kEps = 1e-8, kOuterLr = 0.5, kMu = 0.5;

model::ParamLayout tiny_layout() {
  model::ParamLayout l;
  l.add("wte", {3, 4}, model::ParamKind::PARAM_KIND_EMBEDDING);
  l.add("ln.weight", {4}, model::ParamKind::PARAM_KIND_NORM);
  l.add("fc.weight", {4, 3}, model::ParamKind::PARAM_KIND_WEIGHT);
  l.add("fc.bias", {3}, model::ParamKind::PARAM_KIND_BIAS);
  return l;
}

// The first weights, the same on every rank: multiples of 1/64 in [-1/8, 1/8].
constexpr double kScale = 1.0 / 8;
double x0_of(size_t i) {
  return double(int((i * 5) % 17) - 8) / 64;
}

// Rank r's gradient of element i at update t, a multiple of 1/64: opposite signs on the two
// ranks (+1, -2), the same sign flipping with t, one rank only (the other 0), small or zero.
double grad_of(size_t i, int rank, int64_t t) {
  switch (i % 4) {
    case 0:
      return rank == 0 ? 1.0 : -2.0;
    case 1:
      return (rank == 0 ? 0.5 : 0.25) * (t % 2 ? 1.0 : -1.0);
    case 2:
      return rank == 0 ? 0.0 : -0.75 + double(t) / 64;
    default:
      return double(int((i * 7 + size_t(rank) * 3 + size_t(t) * 5) % 9) - 4) / 64;
  }
}

enum class Method { DILOCO, ACCELERATED, MIXED_NESTEROV, ZIJ_LITERAL, GOSSIP };

struct Case {
  const char* label;
  Method method;
  // gasloc and gossip: at 2 ranks one_peer, ring and two_peer are one exchange with the other
  // rank, and complete is an all-reduce with the same result (the pair's mean).
  GossipTopology topology;
  std::vector<int64_t> local_steps;  // one value, or one per rank
  double gossip_weight;              // configured alpha (0: 1/2 in a pair)
  int rounds;
};

int64_t steps_of(const Case& c, int rank) {
  return c.local_steps.size() == 1 ? c.local_steps[0] : c.local_steps[size_t(rank)];
}
int64_t slots_of(const Case& c) {
  return *std::max_element(c.local_steps.begin(), c.local_steps.end());
}

// One rank in the reference: replica, inner moments, anchor, outer momentum or y_prev.
struct RefRank {
  std::vector<double> x, m, v, anchor, mom, y_prev;
};

// AdamW with weight decay 0 and no clipping at the rank's own step count s, as the kernel writes
// it: m/(1 - b1^s) / (sqrt(v/(1 - b2^s)) + eps).
void inner_step(RefRank& r, int rank, int64_t t, int64_t s) {
  gossamer::testing::adamw_reference_step(r.x, r.m, r.v, s, {kLr, kB1, kB2, kEps},
                                          [&](size_t i) { return grad_of(i, rank, t); });
}

// Both ranks' expected parameters after every update t = 1..rounds * slots (index t - 1).
std::vector<std::array<std::vector<double>, 2>> reference(const Case& c, size_t n) {
  RefRank r[2];
  for (RefRank& k : r) {
    k.x.resize(n);
    for (size_t i = 0; i < n; ++i) k.x[i] = x0_of(i);
    k.m.assign(n, 0.0);
    k.v.assign(n, 0.0);
    k.mom.assign(n, 0.0);
    k.y_prev = k.x;  // before round 1: the first weights
    k.anchor = k.x;
  }
  const double alpha = c.gossip_weight > 0 ? c.gossip_weight : 0.5;
  const int64_t slots = slots_of(c);
  std::vector<std::array<std::vector<double>, 2>> out;
  for (int64_t t = 1; t <= c.rounds * slots; ++t) {
    const int64_t round = (t - 1) / slots, slot = (t - 1) % slots;
    for (int k = 0; k < 2; ++k)
      if (slot < steps_of(c, k)) inner_step(r[k], k, t, round * steps_of(c, k) + slot + 1);
    if (t % slots == 0) {
      for (size_t i = 0; i < n; ++i) {
        if (c.method == Method::DILOCO) {
          const double delta = ((r[0].anchor[i] - r[0].x[i]) + (r[1].anchor[i] - r[1].x[i])) / 2;
          for (RefRank& k : r) {
            k.mom[i] = kMu * k.mom[i] + delta;
            k.anchor[i] -= kOuterLr * (delta + kMu * k.mom[i]);
            k.x[i] = k.anchor[i];
          }
        } else if (c.method == Method::GOSSIP) {
          const double x0 = r[0].x[i], x1 = r[1].x[i];
          r[0].x[i] = (1 - alpha) * x0 + alpha * x1;
          r[1].x[i] = (1 - alpha) * x1 + alpha * x0;
        } else if (c.method == Method::MIXED_NESTEROV) {
          double z[2];
          for (int k = 0; k < 2; ++k) {
            const double delta = r[k].anchor[i] - r[k].x[i];
            r[k].mom[i] = kMu * r[k].mom[i] + delta;
            z[k] = r[k].anchor[i] - kOuterLr * (delta + kMu * r[k].mom[i]);
          }
          for (int k = 0; k < 2; ++k)
            r[k].x[i] = r[k].anchor[i] = (1 - alpha) * z[k] + alpha * z[1 - k];
        } else if (c.method == Method::ACCELERATED) {  // mix((1 + gamma) y - gamma y_prev)
          double y[2], z[2];
          for (int k = 0; k < 2; ++k) {
            y[k] = r[k].anchor[i] + kOuterLr * (r[k].x[i] - r[k].anchor[i]);
            z[k] = (1 + kMu) * y[k] - kMu * r[k].y_prev[i];
          }
          for (int k = 0; k < 2; ++k) {
            r[k].x[i] = r[k].anchor[i] = (1 - alpha) * z[k] + alpha * z[1 - k];
            r[k].y_prev[i] = y[k];
          }
        } else {  // zij_literal: mix(y) + gamma (y - y_prev)
          double y[2];
          for (int k = 0; k < 2; ++k)
            y[k] = r[k].anchor[i] + kOuterLr * (r[k].x[i] - r[k].anchor[i]);
          for (int k = 0; k < 2; ++k) {
            const double next =
                (1 - alpha) * y[k] + alpha * y[1 - k] + kMu * (y[k] - r[k].y_prev[i]);
            r[k].x[i] = r[k].anchor[i] = next;
            r[k].y_prev[i] = y[k];
          }
        }
      }
    }
    out.push_back({r[0].x, r[1].x});
  }
  return out;
}

// Float against double: within 1e-6 relative, or 1e-6 of `scale` (the inputs' magnitude) when
// the result is smaller.
bool near(double got, double want, double scale) {
  return std::fabs(got - want) <= 1e-6 * std::max(std::fabs(want), scale);
}

void run_two_rank_case(const Case& c) {
  Communicator& comm = *g_mpi;
  const int rank = comm.rank(), peer = 1 - rank;
  const model::ParamLayout layout = tiny_layout();
  const size_t n = layout.total();
  optim::OptimizerConfig cfg;
  cfg.name = c.method == Method::DILOCO   ? "diloco"
             : c.method == Method::GOSSIP ? "gossip"
                                          : "gasloc";
  cfg.lr = kLr, cfg.beta1 = kB1, cfg.beta2 = kB2, cfg.eps = kEps;
  cfg.weight_decay = 0, cfg.grad_clip = 0;
  const optim::LocalSteps steps{c.local_steps};
  cfg.diloco.local_steps = steps, cfg.diloco.outer_lr = kOuterLr, cfg.diloco.outer_momentum = kMu;
  cfg.gasloc.local_steps = steps, cfg.gasloc.outer_lr = kOuterLr, cfg.gasloc.outer_momentum = kMu;
  cfg.gossip.local_steps = steps;
  cfg.gasloc.topology = cfg.gossip.topology = c.topology;
  cfg.gasloc.gossip_weight = cfg.gossip.gossip_weight = c.gossip_weight;
  cfg.gasloc.mode = c.method == Method::ZIJ_LITERAL ? optim::GaslocMode::GASLOC_MODE_ZIJ_LITERAL
                    : c.method == Method::MIXED_NESTEROV
                        ? optim::GaslocMode::GASLOC_MODE_MIXED_NESTEROV
                        : optim::GaslocMode::GASLOC_MODE_ACCELERATED;
  const optim::ParallelConfig par;
  auto opt = optim::make_optimizer({cfg, par, layout, kernels::cpu_ops(), comm, comm, kSeed, 100});
  std::vector<float> x(n), g(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(x0_of(i));
  opt->attach(x, g);
  const auto want = reference(c, n);
  const int64_t slots = slots_of(c);
  for (int64_t t = 1; t <= int64_t(want.size()); ++t) {
    SCOPED_TRACE("update " + std::to_string(t) + ", rank " + std::to_string(rank));
    for (size_t i = 0; i < n; ++i) g[i] = float(grad_of(i, rank, t));
    const CommStats before = comm.stats();
    opt->step({t, kLr});
    const CommStats d = comm.stats().since(before);
    const std::vector<double>& w = want[size_t(t - 1)][size_t(rank)];
    size_t wrong = 0;
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      wrong += !near(x[i], w[i], kScale);
      worst = std::max(worst, std::fabs(x[i] - w[i]));
    }
    EXPECT_EQ(wrong, 0u) << wrong << " of " << n << " parameters off the formulas (largest error "
                         << worst << ")";
    const bool round_end = t % slots == 0;
    const bool all_reduce =
        c.method == Method::DILOCO || c.topology == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE;
    if (!round_end) {  // between round ends: no message at all
      int64_t calls = 0;
      for (const KindStats& k : d.kinds) calls += k.calls;
      EXPECT_EQ(calls, 0) << "a collective between round ends";
      EXPECT_EQ(d.bytes_sent(), 0);
    } else if (all_reduce) {  // one all-reduce of N floats: 2(k-1)/k 4N = 4N
      EXPECT_EQ(d[Kind::ALL_REDUCE].calls, 1);
      EXPECT_EQ(d[Kind::ALL_REDUCE].bytes_sent, int64_t(4 * n));
      EXPECT_EQ(d[Kind::SENDRECV].calls, 0);
    } else {  // one sendrecv with the partner, nothing global
      EXPECT_EQ(d[Kind::SENDRECV].calls, 1);
      EXPECT_EQ(d[Kind::SENDRECV].bytes_sent, int64_t(4 * n));
      EXPECT_EQ(d[Kind::SENDRECV].bytes_received, int64_t(4 * n));
      EXPECT_EQ(d[Kind::ALL_REDUCE].calls + d[Kind::ALL_GATHER].calls, 0);
    }
    // Identical at round ends: diloco, and the complete graph's exact average but zij_literal.
    const bool identical_at_end =
        c.method == Method::DILOCO || (c.topology == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE &&
                                       c.method != Method::ZIJ_LITERAL && c.gossip_weight == 0);
    EXPECT_EQ(opt->replicas_identical_now(), identical_at_end && round_end);
    // The replicas, compared bit for bit.
    std::vector<float> theirs(n);
    comm.sendrecv(x.data(), n, peer, theirs.data(), n, peer, DType::F32).wait();
    size_t differ = 0;
    for (size_t i = 0; i < n; ++i) differ += std::memcmp(&x[i], &theirs[i], sizeof(float)) != 0;
    if (!round_end) {
      EXPECT_GT(differ, 0u) << "replicas equal inside a round despite different gradients";
    } else if (c.method == Method::ZIJ_LITERAL) {  // the unmixed momentum term separates them
      EXPECT_GT(differ, 0u) << "zij_literal replicas identical after round " << t / slots;
    } else if (c.gossip_weight > 0 && c.gossip_weight != 0.5) {
      EXPECT_GT(differ, 0u) << "alpha " << c.gossip_weight << " averaged exactly";
    } else {
      EXPECT_EQ(differ, 0u) << differ << " of " << n << " elements differ between the replicas";
    }
  }
  // Evaluation weights: diloco's anchor, the others' average of the two replicas.
  std::vector<float> eval(n);
  ASSERT_TRUE(opt->evaluation_weights(eval));
  const auto& last = want.back();
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    const double expect =
        c.method == Method::DILOCO ? last[size_t(rank)][i] : (last[0][i] + last[1][i]) / 2;
    wrong += !near(eval[i], expect, kScale);
  }
  EXPECT_EQ(wrong, 0u) << "evaluation weights";
}

TEST(LocalRoundsOuter, TwoRanksMatchTheHandComputedFormulas) {
  Communicator& comm = *g_mpi;
  if (comm.size() != 2) GTEST_SKIP() << "SKIPPED: the hand-computed values are for 2 ranks";
  constexpr GossipTopology kOne = GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER,
                           kTwo = GossipTopology::GOSSIP_TOPOLOGY_TWO_PEER,
                           kRing = GossipTopology::GOSSIP_TOPOLOGY_RING,
                           kComplete = GossipTopology::GOSSIP_TOPOLOGY_COMPLETE;
  const Case cases[] = {
      {"diloco H=1", Method::DILOCO, kOne, {1}, 0, 3},
      {"diloco H=[2,1]", Method::DILOCO, kOne, {2, 1}, 0, 2},
      {"gasloc mixed_nesterov H=1", Method::MIXED_NESTEROV, kOne, {1}, 0, 3},
      {"gasloc mixed_nesterov H=[1,2]", Method::MIXED_NESTEROV, kOne, {1, 2}, 0, 2},
      {"gasloc zij_literal H=1", Method::ZIJ_LITERAL, kOne, {1}, 0, 3},
      {"gasloc accelerated H=1", Method::ACCELERATED, kOne, {1}, 0, 3},
      {"gasloc accelerated H=[1,2] alpha=1/4", Method::ACCELERATED, kOne, {1, 2}, 0.25, 3},
      {"gasloc accelerated H=2 complete", Method::ACCELERATED, kComplete, {2}, 0, 3},
      {"gossip H=1", Method::GOSSIP, kOne, {1}, 0, 3},
      {"gossip H=1 alpha=1/4", Method::GOSSIP, kOne, {1}, 0.25, 2},
      {"gasloc mixed_nesterov H=1 ring", Method::MIXED_NESTEROV, kRing, {1}, 0, 2},
      {"gasloc zij_literal H=1 two_peer", Method::ZIJ_LITERAL, kTwo, {1}, 0, 3},
      {"gasloc mixed_nesterov H=1 complete", Method::MIXED_NESTEROV, kComplete, {1}, 0, 3},
      {"gasloc mixed_nesterov H=[2,1] complete", Method::MIXED_NESTEROV, kComplete, {2, 1}, 0, 2},
      {"gasloc zij_literal H=1 complete", Method::ZIJ_LITERAL, kComplete, {1}, 0, 3},
      {"gossip H=1 complete", Method::GOSSIP, kComplete, {1}, 0, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    run_two_rank_case(c);
  }
}

// ---- 3. bytes and mixing of a gossip round at every size ----------------------------------------

// Rank r's first weights, known to every rank: multiples of 1/64 in [-1/2, 1/2).
double coded(int rank, size_t i) {
  return double(int((size_t(rank) * 37 + i * 11) % 64) - 32) / 64;
}

TEST(LocalRoundsBytes, GossipRoundSendsToItsPeersOnly) {
  Communicator& comm = *g_mpi;
  const int world = comm.size(), rank = comm.rank();
  const model::ParamLayout layout = tiny_layout();
  const size_t n = layout.total();
  const int64_t row = int64_t(4 * n);  // one vector of n floats
  for (GossipTopology topo :
       {GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER, GossipTopology::GOSSIP_TOPOLOGY_TWO_PEER,
        GossipTopology::GOSSIP_TOPOLOGY_RING, GossipTopology::GOSSIP_TOPOLOGY_EXPONENTIAL,
        GossipTopology::GOSSIP_TOPOLOGY_COMPLETE}) {
    SCOPED_TRACE(topo_name(topo) + " at " + std::to_string(world) + " ranks, rank " +
                 std::to_string(rank));
    optim::OptimizerConfig cfg;
    cfg.name = "gasloc";
    cfg.weight_decay = 0, cfg.grad_clip = 0;
    cfg.gasloc.local_steps = {{1}};
    cfg.gasloc.topology = topo;
    cfg.gasloc.outer_lr = kOuterLr, cfg.gasloc.outer_momentum = kMu;
    cfg.gasloc.mode = optim::GaslocMode::GASLOC_MODE_MIXED_NESTEROV;
    const optim::ParallelConfig par;
    auto opt =
        optim::make_optimizer({cfg, par, layout, kernels::cpu_ops(), comm, comm, kSeed, 100});
    // Zero gradients and mixed_nesterov (whose momentum sees only the pseudo-gradient, not the
    // mixing): the inner step moves nothing, so delta = 0 and z = x, and the round is
    // the mixing alone: x_r <- (1 - deg_r alpha) x_r + alpha sum over its sources x_s. The
    // complete graph starts every rank from the same weights, as a run does (its exact average
    // takes DiLoCo's path, which assumes the ranks' anchors equal).
    const bool complete = topo == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE;
    std::vector<float> x(n), g(n, 0.0f);
    std::vector<std::vector<double>> all(static_cast<size_t>(world), std::vector<double>(n));
    for (int r = 0; r < world; ++r)
      for (size_t i = 0; i < n; ++i) all[size_t(r)][i] = coded(complete ? 0 : r, i);
    for (size_t i = 0; i < n; ++i) x[i] = float(all[size_t(rank)][i]);
    opt->attach(x, g);
    const double alpha = optim::gossip_weight(topo, world, 0);
    for (int64_t t = 1; t <= 3; ++t) {
      const CommStats before = comm.stats();
      opt->step({t, 0.01});
      const CommStats d = comm.stats().since(before);
      const std::vector<GossipExchange> ex = optim::round_exchanges(topo, world, rank, kSeed, t);
      if (complete) {  // one all-reduce of N floats, no sendrecv
        EXPECT_EQ(d[Kind::ALL_REDUCE].calls, 1) << "round " << t;
        EXPECT_EQ(d[Kind::ALL_REDUCE].bytes_sent, 2 * int64_t(world - 1) * row / world)
            << "round " << t;
        EXPECT_EQ(d[Kind::SENDRECV].calls, 0) << "round " << t;
      } else {
        const int64_t sent = d[Kind::SENDRECV].bytes_sent;
        if (topo == GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER) {
          const int partner = optim::random_matching(world, kSeed, t, 0)[size_t(rank)];
          EXPECT_EQ(sent, partner < 0 ? 0 : row) << "round " << t << ", partner " << partner;
        }
        if (topo == GossipTopology::GOSSIP_TOPOLOGY_RING && world >= 3) {
          EXPECT_EQ(sent, 2 * row) << "round " << t;
        }
        EXPECT_EQ(sent, int64_t(ex.size()) * row) << "round " << t;
        EXPECT_EQ(d[Kind::SENDRECV].bytes_received, int64_t(ex.size()) * row) << "round " << t;
        EXPECT_EQ(d[Kind::SENDRECV].calls, ex.empty() ? 0 : 1) << "round " << t;
        for (Kind k : {Kind::ALL_REDUCE, Kind::ALL_GATHER, Kind::REDUCE_SCATTER, Kind::BROADCAST,
                       Kind::BARRIER}) {
          EXPECT_EQ(d[k].calls, 0) << kind_name(k) << " in round " << t;
          EXPECT_EQ(d[k].bytes_sent + d[k].bytes_received, 0) << kind_name(k) << " in round " << t;
        }
      }
      // Every rank's vector after the round, from every rank's exchanges.
      std::vector<std::vector<double>> next = all;
      for (int r = 0; r < world; ++r) {
        if (complete) {
          for (size_t i = 0; i < n; ++i) {
            double sum = 0;
            for (int s = 0; s < world; ++s) sum += all[size_t(s)][i];
            next[size_t(r)][i] = sum / world;
          }
          continue;
        }
        const std::vector<GossipExchange> rex = optim::round_exchanges(topo, world, r, kSeed, t);
        for (size_t i = 0; i < n; ++i) {
          double v = (1 - double(rex.size()) * alpha) * all[size_t(r)][i];
          for (const GossipExchange& e : rex) v += alpha * all[size_t(e.recv_from)][i];
          next[size_t(r)][i] = v;
        }
      }
      all = next;
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) wrong += !near(x[i], all[size_t(rank)][i], 0.5);
      EXPECT_EQ(wrong, 0u) << wrong << " of " << n << " elements off the mixing of round " << t;
    }
  }
}

}  // namespace
}  // namespace gossamer::comm

int main(int argc, char** argv) {
  return gossamer::comm::test::run_all_ranks(argc, argv);
}
