// Per-step agreement and telemetry between ranks: after each optimizer step every rank learns
// the mean training loss over ranks, whether any rank received an interrupt signal and which
// (so all ranks checkpoint and stop at the same step, and say why), and each rank's communication
// so far in the step (bytes sent, seconds waited; the simulated clock when parallel.sim is on) for
// metrics.jsonl. One small all-gather per step (none at world size 1); its own bytes are counted in
// the step's statistics like any other.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"

namespace gossamer::train {

struct StepTelemetry {
  double mean_loss = 0;
  int interrupt_signal = 0;  // the signal of the lowest rank that received one (0: none)
  int interrupt_rank = -1;   // that rank
  struct Rank {
    int64_t bytes_sent = 0;
    double wait_s = 0;
    // Its simulated clock (NaN: time is not simulated).
    double sim_time = std::numeric_limits<double>::quiet_NaN();
  };
  std::vector<Rank> ranks;
  // [{"rank": 0, "bytes_sent": ..., "wait_s": ..., "sim_time": ... (if simulated)}, ...]
  nlohmann::json ranks_json() const;
};

// `computed`: whether this rank computed a gradient this step (a rank idling in its method's
// round contributes no loss to the mean).
// `signal`: the signal this rank received (0: none).
StepTelemetry exchange_step_telemetry(comm::Communicator& comm, double local_loss, bool computed,
                                      int signal, const comm::CommStats& step_so_far);

// Throws gossamer::Error on every rank, naming the step and the first rank whose parameters
// differ bit-wise from rank 0's (a 64-bit hash of the buffer is compared).
void check_replicas_identical(comm::Communicator& comm, std::span<const float> params,
                              int64_t step);

// {"all_reduce": {"calls", "compressed_calls", "bytes_sent", "raw_bytes_sent", "bytes_received",
// "wait_s"}, ...} for the kinds used (raw_bytes_sent: before compression; docs/COMM.md).
nlohmann::json comm_stats_json(const comm::CommStats& stats);

}  // namespace gossamer::train
