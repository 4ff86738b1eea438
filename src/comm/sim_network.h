// SimNetwork: the links of simulated time (parallel.sim, sim_config.h) as numbers: the rate in
// bytes per second at which rank i's message to rank j moves, and the latency every message
// adds. Built once per world from a validated config; immutable, shared by the ranks' clocks.
#pragma once

#include <string>
#include <vector>

#include "comm/sim_config.h"

namespace gossamer::comm {

class SimNetwork {
 public:
  // `config` must pass validate_for_world(..., ranks) and have a network other than none.
  SimNetwork(const SimConfig& config, int ranks);
  int ranks() const { return ranks_; }
  double bytes_per_s(int from, int to) const { return rate_[size_t(from) * ranks_ + size_t(to)]; }
  double latency_s() const { return latency_s_; }
  // For the log: "uniform, every rank sends at 1000 Mbit/s, latency 0 us".
  const std::string& describe() const { return text_; }

 private:
  int ranks_;
  double latency_s_;
  std::vector<double> rate_;  // ranks x ranks, bytes per second
  std::string text_;
};

}  // namespace gossamer::comm
