// Gossip topologies (docs/GASLOC.md): which ranks a rank exchanges vectors with at a round.
// A round's exchanges are a list of (send to one rank, receive from one rank) pairs, all posted at
// once (Communicator::sendrecv_many), so their order does not have to match across ranks; random
// matchings are drawn from (seed, round) alone, so every rank derives the same graph without a
// message. Invariants: over a round, rank a sends to b exactly when b receives from a; a
// matching pairs every rank with another, except one rank sitting out when the world is odd;
// mixing with uniform weight alpha (alpha <= 1 / (largest degree)) is doubly stochastic.
#pragma once

#include <cstdint>
#include <vector>

#include "optim/local_steps_config.h"

namespace gossamer::optim {

struct GossipExchange {
  int send_to;
  int recv_from;
};

// partner[r] of the `which`-th random perfect matching of round `round` (-1: rank r sits out).
std::vector<int> random_matching(int world, uint64_t seed, int64_t round, int which);

// The exchanges of `rank` at `round`, in the order every rank issues them (complete: none,
// the complete graph is one all-reduce).
std::vector<GossipExchange> round_exchanges(GossipTopology topology, int world, int rank,
                                            uint64_t seed, int64_t round);

// The largest number of vectors a rank receives in a round (complete: world - 1).
int max_in_degree(GossipTopology topology, int world);

// alpha: `configured` when > 0, else 1 / (max_in_degree + 1).
double gossip_weight(GossipTopology topology, int world, double configured);

}  // namespace gossamer::optim
