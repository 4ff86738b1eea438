// Gossip topologies (optim/gossip_topology.h): for world sizes 1-9 and 1000 rounds, every
// rank's exchanges computed on its own agree with every other rank's (a sends to b exactly when b
// receives from a), random matchings are perfect matchings (one
// rank sits out when the world is odd) that change from round to round and repeat for the same
// seed and round, degrees stay within max_in_degree, and the automatic weight is 1 / (degree + 1).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "optim/gossip_topology.h"

using namespace gossamer;
using optim::GossipExchange;
using optim::GossipTopology;

namespace {

constexpr GossipTopology kTopologies[] = {
    GossipTopology::GOSSIP_TOPOLOGY_RING, GossipTopology::GOSSIP_TOPOLOGY_EXPONENTIAL,
    GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER, GossipTopology::GOSSIP_TOPOLOGY_TWO_PEER};

}  // namespace

TEST(GossipTopology, EveryRankAgreesOnEveryRoundsExchanges) {
  const uint64_t seed = 1337;
  for (GossipTopology topo : kTopologies)
    for (int world = 1; world <= 9; ++world) {
      int wrong = 0;
      for (int64_t round = 0; round < 1000; ++round) {
        std::vector<std::vector<GossipExchange>> ex;
        for (int r = 0; r < world; ++r)
          ex.push_back(optim::round_exchanges(topo, world, r, seed, round));
        for (int r = 0; r < world; ++r) {
          wrong += int(ex[size_t(r)].size()) > optim::max_in_degree(topo, world);
          std::set<int> sources;
          for (size_t e = 0; e < ex[size_t(r)].size(); ++e) {
            const GossipExchange x = ex[size_t(r)][e];
            wrong += x.send_to == r || x.recv_from == r || !sources.insert(x.recv_from).second;
            // The rank this one sends to receives from it in the same round.
            int found = 0;
            for (const GossipExchange& y : ex[size_t(x.send_to)]) found += y.recv_from == r;
            wrong += found != 1;
          }
        }
      }
      EXPECT_EQ(wrong, 0) << enum_name(topo) << " at " << world << " ranks";
    }
}

TEST(GossipTopology, RandomMatchingsArePerfectDeterministicAndChange) {
  for (int world = 1; world <= 9; ++world) {
    std::set<std::vector<int>> distinct;
    int wrong = 0;
    for (int64_t round = 0; round < 1000; ++round)
      for (int which = 0; which < 2; ++which) {
        const std::vector<int> p = optim::random_matching(world, 42, round, which);
        wrong += p != optim::random_matching(world, 42, round, which);  // same inputs, same draw
        int alone = 0;
        for (int r = 0; r < world; ++r) {
          if (p[size_t(r)] < 0) {
            ++alone;
            continue;
          }
          wrong += p[size_t(r)] == r || p[size_t(p[size_t(r)])] != r;
        }
        wrong += alone != world % 2;
        distinct.insert(p);
      }
    EXPECT_EQ(wrong, 0) << world << " ranks";
    // 4 ranks have 3 perfect matchings, 6 ranks 15: every one of them appears over 2000 draws.
    if (world == 4) {
      EXPECT_EQ(distinct.size(), 3u);
    }
    if (world == 6) {
      EXPECT_EQ(distinct.size(), 15u);
    }
  }
  EXPECT_NE(optim::random_matching(8, 1, 5, 0), optim::random_matching(8, 2, 5, 0));
}

TEST(GossipTopology, FixedGraphsAndWeights) {
  using E = std::vector<std::pair<int, int>>;
  auto pairs = [](const std::vector<GossipExchange>& ex) {
    E out;
    for (const GossipExchange& x : ex) out.emplace_back(x.send_to, x.recv_from);
    return out;
  };
  EXPECT_EQ(pairs(optim::round_exchanges(GossipTopology::GOSSIP_TOPOLOGY_RING, 5, 0, 0, 0)),
            (E{{1, 4}, {4, 1}}));
  EXPECT_EQ(pairs(optim::round_exchanges(GossipTopology::GOSSIP_TOPOLOGY_RING, 2, 1, 0, 0)),
            (E{{0, 0}}));
  EXPECT_EQ(pairs(optim::round_exchanges(GossipTopology::GOSSIP_TOPOLOGY_EXPONENTIAL, 8, 3, 0, 0)),
            (E{{4, 2}, {5, 1}, {7, 7}}));
  EXPECT_TRUE(optim::round_exchanges(GossipTopology::GOSSIP_TOPOLOGY_COMPLETE, 8, 3, 0, 0).empty());
  EXPECT_EQ(optim::max_in_degree(GossipTopology::GOSSIP_TOPOLOGY_EXPONENTIAL, 5), 3);
  EXPECT_DOUBLE_EQ(optim::gossip_weight(GossipTopology::GOSSIP_TOPOLOGY_COMPLETE, 4, 0), 0.25);
  EXPECT_DOUBLE_EQ(optim::gossip_weight(GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER, 7, 0), 0.5);
  EXPECT_DOUBLE_EQ(optim::gossip_weight(GossipTopology::GOSSIP_TOPOLOGY_RING, 4, 0), 1.0 / 3);
  EXPECT_DOUBLE_EQ(optim::gossip_weight(GossipTopology::GOSSIP_TOPOLOGY_TWO_PEER, 4, 0.2), 0.2);
}
