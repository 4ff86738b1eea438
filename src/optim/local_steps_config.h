// The sections of the methods that take local steps between communications (docs/GASLOC.md):
// `optimizer.diloco` (DiLoCo: all-reduce of the pseudo-gradient, outer Nesterov),
// `optimizer.gasloc` (GASLoC: gossip with the round's peers, accelerated outer update) and
// `optimizer.gossip` (gossip SGD / D-PSGD-style averaging, the decentralised baseline).
// String options are enums from parse time on; local_steps is a number or a per-rank list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_names.h"

namespace gossamer::optim {

// Inner steps per round: one number for every rank, or one per rank (heterogeneous workers).
// A round lasts max() trainer steps; rank r computes in the first of(r) of them and idles in the
// rest (its batches drawn and dropped), so slow workers can do fewer steps per round.
struct LocalSteps {
  std::vector<int64_t> values{1};
  bool per_rank() const { return values.size() > 1; }
  int64_t of(int rank) const { return per_rank() ? values.at(size_t(rank)) : values.front(); }
  int64_t max() const;
  bool operator==(const LocalSteps&) const = default;
};

enum class GossipTopology {
  GOSSIP_TOPOLOGY_COMPLETE,
  GOSSIP_TOPOLOGY_RING,
  GOSSIP_TOPOLOGY_EXPONENTIAL,
  GOSSIP_TOPOLOGY_ONE_PEER,
  GOSSIP_TOPOLOGY_TWO_PEER
};
enum class GaslocMode {
  GASLOC_MODE_ACCELERATED,
  GASLOC_MODE_MIXED_NESTEROV,
  GASLOC_MODE_ZIJ_LITERAL
};

// optimizer.diloco
struct DilocoConfig {
  LocalSteps local_steps{{500}};
  double outer_lr = 0.7;
  double outer_momentum = 0.9;

  template <class V>
  void visit(V& v) {
    v("local_steps", local_steps,
      "H: inner AdamW steps per round, then one all-reduce of the pseudo-gradient and the outer "
      "step (DiLoCo: 500); one number, or a list with one entry per rank (as in gasloc)");
    v("outer_lr", outer_lr, "the outer Nesterov step's learning rate (DiLoCo: 0.7)");
    v("outer_momentum", outer_momentum, "the outer Nesterov momentum (DiLoCo: 0.9)");
  }
  void validate(const std::string& path) const;
};

// The gossip graph, shared by optimizer.gasloc and optimizer.gossip.
struct GossipGraph {
  GossipTopology topology = GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER;
  double gossip_weight = 0;
  double mix_momentum = 0;

  // A checkpoint written before mix_momentum existed mixed without it.
  template <class R>
  static void resume_keys(R& r) {
    r.added_later("mix_momentum", 0.0);
  }

  template <class V>
  void visit_graph(V& v) {
    v("topology", topology,
      "who mixes with whom at a round: complete (everyone: one all-reduce), ring (the two "
      "neighbours), exponential (receives from rank - 2^j, sends to rank + 2^j, j < "
      "ceil(log2 world)), one_peer (a random perfect matching per round), two_peer (two random "
      "matchings per round); random peers come from train.seed and the round number, so ranks "
      "agree without messages, and with an odd world size one rank sits out each matching");
    v("gossip_weight", gossip_weight,
      "alpha, the weight of each received neighbour's vector: x_i <- x_i - alpha sum_j (x_i - "
      "x_j); 0: 1 / (the topology's largest degree + 1), which averages exactly on the complete "
      "graph and in a pair of a matching");
    v("mix_momentum", mix_momentum,
      "beta: heavy-ball momentum of the mixing that acts on the replicas' disagreement only. "
      "With z the vector a rank mixes and c its correction of the previous round (x - z; 0 "
      "before round 1): x <- W z + beta (W z - z + c). The corrections sum to zero over the "
      "ranks, so the mean of x is the mean of z: the average's trajectory is untouched and "
      "only consensus is accelerated (pure averaging: x_{t+1} = (1 + beta) W x_t - beta "
      "x_{t-1}). 0: plain gossip. In gasloc, mode mixed_nesterov only; docs/GASLOC.md");
  }
  void validate_graph(const std::string& path) const;
};

// optimizer.gasloc
struct GaslocConfig : GossipGraph {
  LocalSteps local_steps{{500}};
  GaslocMode mode = GaslocMode::GASLOC_MODE_ACCELERATED;
  double outer_lr = 0.7;
  double outer_momentum = 0.9;
  bool complete_fast_path = true;

  template <class V>
  void visit(V& v) {
    v("local_steps", local_steps,
      "H_i: inner AdamW steps per round before the exchange; one number, or a list with one "
      "entry per rank (a round then lasts max H_i steps and rank i computes in its first H_i)");
    visit_graph(v);
    v("mode", mode,
      "with y = anchor + outer_lr x (replica - anchor), y_prev the previous round's y (the "
      "first anchor before round 1) and W the round's mixing: accelerated: x <- W[(1 + gamma) y "
      "- gamma y_prev], the momentum mixed with the gossip, so consensus is accelerated (on the "
      "complete graph: DiLoCo's Nesterov step); zij_literal: x <- W y + gamma (y - y_prev), the "
      "page's equation, the momentum term unmixed; mixed_nesterov: each rank's Nesterov step on "
      "its own pseudo-gradient, then plain gossip (no consensus acceleration); "
      "docs/GASLOC.md");
    v("outer_lr", outer_lr, "the outer step's learning rate (eta)");
    v("outer_momentum", outer_momentum,
      "the outer momentum (gamma in accelerated and zij_literal, mu of Nesterov in "
      "mixed_nesterov)");
    v("complete_fast_path", complete_fast_path,
      "mixed_nesterov on the complete graph with exact averaging: true runs DiLoCo's round on "
      "the ranks' mean momentum (bit-identical to diloco), false the general mixing path (equal "
      "up to rounding; tests compare the two)");
  }
  void validate(const std::string& path) const;
};

// optimizer.gossip
struct GossipConfig : GossipGraph {
  LocalSteps local_steps{{1}};

  template <class V>
  void visit(V& v) {
    v("local_steps", local_steps,
      "inner AdamW steps between two mixings (1: D-PSGD-style, one step per communication); one "
      "number or a per-rank list");
    visit_graph(v);
  }
  void validate(const std::string& path) const;
};

}  // namespace gossamer::optim

namespace gossamer {
template <>
struct EnumNames<optim::GossipTopology> {
  static constexpr std::pair<optim::GossipTopology, std::string_view> values[] = {
      {optim::GossipTopology::GOSSIP_TOPOLOGY_COMPLETE, "complete"},
      {optim::GossipTopology::GOSSIP_TOPOLOGY_RING, "ring"},
      {optim::GossipTopology::GOSSIP_TOPOLOGY_EXPONENTIAL, "exponential"},
      {optim::GossipTopology::GOSSIP_TOPOLOGY_ONE_PEER, "one_peer"},
      {optim::GossipTopology::GOSSIP_TOPOLOGY_TWO_PEER, "two_peer"}};
};
template <>
struct EnumNames<optim::GaslocMode> {
  static constexpr std::pair<optim::GaslocMode, std::string_view> values[] = {
      {optim::GaslocMode::GASLOC_MODE_ACCELERATED, "accelerated"},
      {optim::GaslocMode::GASLOC_MODE_MIXED_NESTEROV, "mixed_nesterov"},
      {optim::GaslocMode::GASLOC_MODE_ZIJ_LITERAL, "zij_literal"}};
};
}  // namespace gossamer
