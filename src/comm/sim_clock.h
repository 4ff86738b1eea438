// SimClock: one rank's simulated clock (parallel.sim; docs/NETWORK.md, "Simulated time"). It
// advances by the rank's compute, the CPU time its thread used since the last reading times
// parallel.sim.compute_scale (or, at parallel.sim.gflops, its model's counted FLOPs over that
// rate: the trainer sets that source), and by waits: an operation completes at the latest arrival
// of the messages it takes, each sent at its sender's clock and arriving after the link's latency
// plus bytes / rate; a rank's messages leave one after another (its egress is a queue, as under
// scripts/emulate-network.sh), and what it receives is not limited. Invariants: the clock never
// goes back; compute + waited = the clock; safe to use from several threads.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "comm/sim_network.h"

namespace gossamer::comm {

class SimClock {
 public:
  // A clock at 0 that charges no compute until attach_this_thread() or set_cpu_source().
  SimClock(std::shared_ptr<const SimNetwork> network, int rank, double compute_scale);

  // The calling thread is the rank's: the CPU time it uses from now on is the rank's compute.
  void attach_this_thread();
  // The rank's compute counter in seconds (attach_this_thread sets the thread's CPU time; the
  // trainer sets FLOPs / rate at parallel.sim.gflops; tests set fakes). What the previous
  // source counted up to now is charged first; an empty function stops charging compute.
  void set_cpu_source(std::function<double()> cpu_seconds);

  // The clock, after charging the compute since the last reading.
  double now();

  struct Transfer {
    double leaves;   // the last byte leaves this rank
    double arrives;  // the message is at the receiver
  };
  // A message of `bytes` to rank `to`, handed to the network at `at` (nullopt: now()).
  Transfer send(int to, size_t bytes, std::optional<double> at = std::nullopt);

  // The rank was busy for `seconds` without using CPU (a sleep standing for slow compute, as
  // GOSSAMER_FAULT=delay does): charged as compute, unscaled.
  void advance(double seconds);

  // An operation that completed at `t` was waited for: the clock becomes max(now(), t).
  void wait_until(double t);

  double compute_s();  // compute charged so far
  double waited_s();   // time the clock jumped for waits

  const SimNetwork& network() const { return *network_; }

 private:
  void charge_locked();
  std::shared_ptr<const SimNetwork> network_;
  const int rank_;
  const double scale_;
  std::mutex mutex_;
  std::function<double()> cpu_;
  double last_cpu_ = 0;
  double clock_ = 0, egress_free_ = 0, compute_ = 0, waited_ = 0;
};

}  // namespace gossamer::comm
