// exchange_step_telemetry() and the JSON / text formatting of communication statistics.
#include "train/step_telemetry.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "comm/gather_values.h"
#include "comm/sim_clock.h"
#include "core/error.h"

namespace gossamer::train {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

StepTelemetry exchange_step_telemetry(comm::Communicator& comm, double local_loss, bool computed,
                                      int signal, const comm::CommStats& step_so_far) {
  // With simulated time, each rank's clock too (as it enters this exchange).
  comm::SimClock* const sim = comm.sim_clock();
  const int kValues = sim ? 6 : 5;
  const double mine[6] = {
      computed ? local_loss : 0.0,      computed ? 1.0 : 0.0,         double(signal),
      double(step_so_far.bytes_sent()), step_so_far.seconds_waited(), sim ? sim->now() : 0.0};
  const std::vector<double> all =
      comm::all_gather_doubles(comm, std::span<const double>(mine, size_t(kValues)));
  StepTelemetry t;
  double sum = 0, computing = 0;
  for (int r = 0; r < comm.size(); ++r) {
    const double* v = all.data() + kValues * r;
    sum += v[0];
    computing += v[1];
    if (t.interrupt_signal == 0 && v[2] != 0.0) {
      t.interrupt_signal = int(v[2]);
      t.interrupt_rank = r;
    }
    t.ranks.push_back({int64_t(v[3]), v[4], sim ? v[5] : kNaN});
  }
  t.mean_loss = sum / computing;  // some rank computes at every step (local_steps >= 1)
  return t;
}

nlohmann::json StepTelemetry::ranks_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (size_t r = 0; r < ranks.size(); ++r) {
    out.push_back({{"rank", r}, {"bytes_sent", ranks[r].bytes_sent}, {"wait_s", ranks[r].wait_s}});
    if (std::isfinite(ranks[r].sim_time)) out.back()["sim_time"] = ranks[r].sim_time;
  }
  return out;
}

void check_replicas_identical(comm::Communicator& comm, std::span<const float> params,
                              int64_t step) {
  // FNV-1a over 64-bit words (the bits, so -0.0 != 0.0 and NaN payloads count).
  uint64_t h = 1469598103934665603ull;
  const auto* words = reinterpret_cast<const uint32_t*>(params.data());
  for (size_t i = 0; i < params.size(); ++i) h = (h ^ words[i]) * 1099511628211ull;
  double as_double;
  std::memcpy(&as_double, &h, sizeof h);
  const std::vector<double> all = comm::all_gather_doubles(comm, {&as_double, 1});
  for (int r = 1; r < comm.size(); ++r)
    if (std::memcmp(&all[size_t(r)], &all[0], sizeof(double)) != 0)
      throw CollectiveError(
          strprintf("step %lld: the parameters of rank %d differ from rank 0's (replicas must be "
                    "bit-identical)",
                    (long long)step, r));
}

nlohmann::json comm_stats_json(const comm::CommStats& stats) {
  nlohmann::json out = nlohmann::json::object();
  for (int k = 0; k < comm::kNumKinds; ++k) {
    const comm::KindStats& s = stats.kinds[size_t(k)];
    if (s.calls == 0) continue;
    out[comm::kind_name(comm::Kind(k))] = {{"calls", s.calls},
                                           {"compressed_calls", s.compressed_calls},
                                           {"bytes_sent", s.bytes_sent},
                                           {"raw_bytes_sent", s.raw_bytes_sent},
                                           {"bytes_received", s.bytes_received},
                                           {"wait_s", s.seconds_waited}};
  }
  return out;
}

}  // namespace gossamer::train
