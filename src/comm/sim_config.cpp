// SimConfig::validate and validate_for_world (see sim_config.h).
#include "comm/sim_config.h"

#include <cmath>

#include "core/error.h"

namespace gossamer::comm {

namespace {
void check_rate(const std::string& key, double mbit) {
  GOSSAMER_CHECK(std::isfinite(mbit) && mbit > 0,
                 "%s: a send rate must be a positive number of Mbit/s, found %g", key.c_str(),
                 mbit);
}
}  // namespace

void SimConfig::validate(const std::string& p) const {
  check_rate(p + "bandwidth_mbit", bandwidth_mbit);
  check_rate(p + "slow_bandwidth_mbit", slow_bandwidth_mbit);
  GOSSAMER_CHECK(std::isfinite(latency_us) && latency_us >= 0,
                 "%slatency_us: must be >= 0, found %g", p.c_str(), latency_us);
  GOSSAMER_CHECK(std::isfinite(compute_scale) && compute_scale > 0,
                 "%scompute_scale: must be > 0, found %g", p.c_str(), compute_scale);
  GOSSAMER_CHECK(std::isfinite(gflops) && gflops >= 0,
                 "%sgflops: must be >= 0 (0: measured compute), found %g", p.c_str(), gflops);
  GOSSAMER_CHECK(gflops == 0 || compute_scale == 1,
                 "%sgflops = %g and %scompute_scale = %g: the compute is either counted at "
                 "gflops or measured and scaled, not both (leave compute_scale at 1)",
                 p.c_str(), gflops, p.c_str(), compute_scale);
  GOSSAMER_CHECK(slow_rank >= 0, "%sslow_rank: rank %d does not exist (ranks count from 0)",
                 p.c_str(), slow_rank);
  GOSSAMER_CHECK(clusters >= 2, "%sclusters: at least 2, found %d", p.c_str(), clusters);
  for (size_t i = 0; i < rank_mbit.mbit.size(); ++i)
    check_rate(p + "rank_mbit[" + std::to_string(i) + "]", rank_mbit.mbit[i]);
  GOSSAMER_CHECK(network == SimNetworkKind::SIM_NETWORK_PER_RANK || rank_mbit.mbit.empty(),
                 "%srank_mbit: only read by network = per_rank (network is %s)", p.c_str(),
                 std::string(enum_name(network)).c_str());
}

void SimConfig::validate_for_world(const std::string& p, int ranks) const {
  validate(p);
  if (network == SimNetworkKind::SIM_NETWORK_SLOW_RANK)
    GOSSAMER_CHECK(slow_rank < ranks, "%sslow_rank: rank %d does not exist in a world of %d ranks",
                   p.c_str(), slow_rank, ranks);
  if (network == SimNetworkKind::SIM_NETWORK_CLUSTERS)
    GOSSAMER_CHECK(clusters <= ranks, "%sclusters: %d clusters of %d ranks (at most one per rank)",
                   p.c_str(), clusters, ranks);
  if (network == SimNetworkKind::SIM_NETWORK_PER_RANK)
    GOSSAMER_CHECK(rank_mbit.mbit.size() == size_t(ranks),
                   "%srank_mbit: %zu rates for %d ranks (one per rank)", p.c_str(),
                   rank_mbit.mbit.size(), ranks);
}

}  // namespace gossamer::comm
