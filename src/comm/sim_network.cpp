// SimNetwork (see sim_network.h).
#include "comm/sim_network.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::comm {

SimNetwork::SimNetwork(const SimConfig& c, int ranks)
    : ranks_(ranks), latency_s_(c.latency_us * 1e-6), rate_(size_t(ranks) * size_t(ranks)) {
  GOSSAMER_CHECK(c.enabled(), "SimNetwork: parallel.sim.network is none");
  c.validate_for_world("parallel.sim.", ranks);
  const auto bytes = [](double mbit) { return mbit * 1e6 / 8; };
  for (int i = 0; i < ranks; ++i)
    for (int j = 0; j < ranks; ++j) {
      double mbit = c.bandwidth_mbit;
      switch (c.network) {
        case SimNetworkKind::SIM_NETWORK_SLOW_RANK:
          if (i == c.slow_rank) mbit = c.slow_bandwidth_mbit;
          break;
        case SimNetworkKind::SIM_NETWORK_CLUSTERS: {
          // Consecutive ranks, as even as the division allows: rank r in cluster r * k / ranks.
          const int ci = int(int64_t(i) * c.clusters / ranks);
          const int cj = int(int64_t(j) * c.clusters / ranks);
          if (ci != cj) mbit = std::min(mbit, c.slow_bandwidth_mbit);
          break;
        }
        case SimNetworkKind::SIM_NETWORK_PER_RANK:
          mbit = c.rank_mbit.mbit[size_t(i)];
          break;
        default:
          break;
      }
      rate_[size_t(i) * ranks + size_t(j)] = bytes(mbit);
    }
  switch (c.network) {
    case SimNetworkKind::SIM_NETWORK_UNIFORM:
      text_ = strprintf("uniform, every rank sends at %g Mbit/s", c.bandwidth_mbit);
      break;
    case SimNetworkKind::SIM_NETWORK_SLOW_RANK:
      text_ = strprintf("slow_rank, rank %d sends at %g Mbit/s, the others at %g", c.slow_rank,
                        c.slow_bandwidth_mbit, c.bandwidth_mbit);
      break;
    case SimNetworkKind::SIM_NETWORK_CLUSTERS:
      text_ =
          strprintf("clusters, %d of consecutive ranks, %g Mbit/s inside, %g between", c.clusters,
                    c.bandwidth_mbit, std::min(c.bandwidth_mbit, c.slow_bandwidth_mbit));
      break;
    default: {
      std::string list;
      for (double m : c.rank_mbit.mbit) list += (list.empty() ? "" : ", ") + strprintf("%g", m);
      text_ = "per_rank, ranks send at [" + list + "] Mbit/s";
    }
  }
  text_ += strprintf(", latency %g us", c.latency_us);
}

}  // namespace gossamer::comm
