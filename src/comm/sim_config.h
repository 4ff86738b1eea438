// SimConfig: the `parallel.sim` section, the network and compute model of simulated time for
// ranks in one process (docs/NETWORK.md, "Simulated time"). Off by default (network = none).
// Rates are per rank and per direction of sending, as scripts/emulate-network.sh caps them: a
// message from rank i to rank j moves at rank i's rate (in a clusters network at the slower of it
// and the link between the clusters). Invariant: validate() and validate_for_world() refuse every
// setting the model cannot run, naming the key.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_names.h"

namespace gossamer::comm {

enum class SimNetworkKind {
  SIM_NETWORK_NONE,
  SIM_NETWORK_UNIFORM,
  SIM_NETWORK_SLOW_RANK,
  SIM_NETWORK_CLUSTERS,
  SIM_NETWORK_PER_RANK
};

// One send rate in Mbit/s per rank (parallel.sim.rank_mbit).
struct SimRates {
  std::vector<double> mbit;
  bool operator==(const SimRates&) const = default;
};

// parallel.sim
struct SimConfig {
  SimNetworkKind network = SimNetworkKind::SIM_NETWORK_NONE;
  double bandwidth_mbit = 1000;
  double latency_us = 0;
  int slow_rank = 0;
  double slow_bandwidth_mbit = 100;
  int clusters = 2;
  SimRates rank_mbit;
  double compute_scale = 1;
  double gflops = 0;

  bool enabled() const { return network != SimNetworkKind::SIM_NETWORK_NONE; }

  template <class V>
  void visit(V& v) {
    v("network", network,
      "simulated time for ranks in one process (--ranks N; metrics.jsonl's sim_time): none "
      "(off), uniform (every rank sends at bandwidth_mbit), slow_rank (slow_rank sends at "
      "slow_bandwidth_mbit), clusters (`clusters` groups of consecutive ranks; between groups "
      "at slow_bandwidth_mbit), per_rank (rank r sends at rank_mbit[r])");
    v("bandwidth_mbit", bandwidth_mbit,
      "each rank's send rate in Mbit/s (uniform, slow_rank, clusters); a rank's messages leave "
      "one after another");
    v("latency_us", latency_us, "added to every message, in microseconds");
    v("slow_rank", slow_rank, "the slow rank of network = slow_rank");
    v("slow_bandwidth_mbit", slow_bandwidth_mbit,
      "the slow rank's send rate (slow_rank), or the rate between two clusters (clusters), in "
      "Mbit/s");
    v("clusters", clusters, "the number of clusters of network = clusters (at least 2)");
    v("rank_mbit", rank_mbit, "per_rank: one send rate in Mbit/s per rank");
    v("compute_scale", compute_scale,
      "simulated compute = each rank's measured thread CPU time x this (2: a machine half as "
      "fast per core as this one)");
    v("gflops", gflops,
      "0: compute is measured (compute_scale); above 0: each rank computes at this many GFLOP/s, "
      "charged for the FLOPs of its matrix products and attention (6N + 6LCT per training "
      "token) and nothing else, so simulated time is the same on every machine and allows "
      "kernels.threads > 1");
  }
  // Errors name the key under `path` ("parallel.sim.").
  void validate(const std::string& path) const;
  // The same for a world of `ranks` ranks (slow_rank, clusters, rank_mbit's length).
  void validate_for_world(const std::string& path, int ranks) const;
};

}  // namespace gossamer::comm

namespace gossamer {
template <>
struct EnumNames<comm::SimNetworkKind> {
  static constexpr std::pair<comm::SimNetworkKind, std::string_view> values[] = {
      {comm::SimNetworkKind::SIM_NETWORK_NONE, "none"},
      {comm::SimNetworkKind::SIM_NETWORK_UNIFORM, "uniform"},
      {comm::SimNetworkKind::SIM_NETWORK_SLOW_RANK, "slow_rank"},
      {comm::SimNetworkKind::SIM_NETWORK_CLUSTERS, "clusters"},
      {comm::SimNetworkKind::SIM_NETWORK_PER_RANK, "per_rank"}};
};
}  // namespace gossamer
