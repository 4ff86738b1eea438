// Gossip topologies (see gossip_topology.h).
#include "optim/gossip_topology.h"

#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/rng.h"

namespace gossamer::optim {

namespace {

// ceil(log2(world)): the exponential graph's offsets 1, 2, 4, ... below world.
int exponential_degree(int world) {
  int d = 0;
  while ((int64_t(1) << d) < world) ++d;
  return d;
}

}  // namespace

std::vector<int> random_matching(int world, uint64_t seed, int64_t round, int which) {
  std::vector<int> order(static_cast<size_t>(world));
  std::iota(order.begin(), order.end(), 0);
  // One stream per (round, matching), separate from every other use of the seed.
  Rng rng(seed ^ 0x6A09E667F3BCC908ull, uint64_t(round) * 2 + uint64_t(which));
  for (int i = world - 1; i > 0; --i)
    std::swap(order[size_t(i)], order[rng.below(uint64_t(i) + 1)]);
  std::vector<int> partner(size_t(world), -1);
  for (int i = 0; i + 1 < world; i += 2) {  // odd world: the last in the order sits out
    partner[size_t(order[size_t(i)])] = order[size_t(i) + 1];
    partner[size_t(order[size_t(i) + 1])] = order[size_t(i)];
  }
  return partner;
}

std::vector<GossipExchange> round_exchanges(GossipTopology topology, int world, int rank,
                                            uint64_t seed, int64_t round) {
  GOSSAMER_CHECK(world >= 1 && rank >= 0 && rank < world, "gossip: rank %d of %d", rank, world);
  std::vector<GossipExchange> out;
  if (world == 1) return out;
  switch (topology) {
    case GossipTopology::GOSSIP_TOPOLOGY_COMPLETE:
      break;
    case GossipTopology::GOSSIP_TOPOLOGY_RING:
      // Everyone shifts right, then left; with two ranks both shifts are the same exchange.
      out.push_back({(rank + 1) % world, (rank + world - 1) % world});
      if (world > 2) out.push_back({(rank + world - 1) % world, (rank + 1) % world});
      break;
    case GossipTopology::GOSSIP_TOPOLOGY_EXPONENTIAL:
      for (int j = 0; j < exponential_degree(world); ++j) {
        const int offset = 1 << j;
        out.push_back({(rank + offset) % world, (rank + world - offset % world) % world});
      }
      break;
    case GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER:
    case GossipTopology::GOSSIP_TOPOLOGY_TWO_PEER: {
      const int matchings = topology == GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER ? 1 : 2;
      int first = -1;
      for (int which = 0; which < matchings; ++which) {
        const int peer = random_matching(world, seed, round, which)[size_t(rank)];
        // The second matching may pair the same two ranks again: one exchange between them.
        if (peer >= 0 && peer != first) out.push_back({peer, peer});
        if (which == 0) first = peer;
      }
      break;
    }
  }
  return out;
}

int max_in_degree(GossipTopology topology, int world) {
  if (world <= 1) return 0;
  switch (topology) {
    case GossipTopology::GOSSIP_TOPOLOGY_COMPLETE:
      return world - 1;
    case GossipTopology::GOSSIP_TOPOLOGY_RING:
      return world > 2 ? 2 : 1;
    case GossipTopology::GOSSIP_TOPOLOGY_EXPONENTIAL:
      return exponential_degree(world);
    case GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER:
      return 1;
    case GossipTopology::GOSSIP_TOPOLOGY_TWO_PEER:
      return world > 2 ? 2 : 1;
  }
  return 0;
}

double gossip_weight(GossipTopology topology, int world, double configured) {
  if (configured > 0) return configured;
  return 1.0 / double(max_in_degree(topology, world) + 1);
}

}  // namespace gossamer::optim
