// SimClock (see sim_clock.h).
#include "comm/sim_clock.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace gossamer::comm {

SimClock::SimClock(std::shared_ptr<const SimNetwork> network, int rank, double compute_scale)
    : network_(std::move(network)), rank_(rank), scale_(compute_scale) {}

void SimClock::attach_this_thread() {
  clockid_t id;
  GOSSAMER_CHECK(pthread_getcpuclockid(pthread_self(), &id) == 0,
                 "simulated time: rank %d: cannot read its thread's CPU clock", rank_);
  set_cpu_source([id] {
    timespec ts{};
    clock_gettime(id, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  });
}

void SimClock::set_cpu_source(std::function<double()> cpu_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  charge_locked();  // what the old source counted stays charged
  cpu_ = std::move(cpu_seconds);
  last_cpu_ = cpu_ ? cpu_() : 0.0;
}

void SimClock::charge_locked() {
  if (!cpu_) return;
  const double cpu = cpu_();
  const double d = std::max(0.0, cpu - last_cpu_) * scale_;
  last_cpu_ = cpu;
  clock_ += d;
  compute_ += d;
}

double SimClock::now() {
  std::lock_guard<std::mutex> lock(mutex_);
  charge_locked();
  return clock_;
}

SimClock::Transfer SimClock::send(int to, size_t bytes, std::optional<double> at) {
  std::lock_guard<std::mutex> lock(mutex_);
  charge_locked();
  const double start = std::max(at ? *at : clock_, egress_free_);
  const double leaves = start + double(bytes) / network_->bytes_per_s(rank_, to);
  egress_free_ = leaves;
  return {leaves, leaves + network_->latency_s()};
}

void SimClock::advance(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  charge_locked();
  clock_ += seconds;
  compute_ += seconds;
}

void SimClock::wait_until(double t) {
  std::lock_guard<std::mutex> lock(mutex_);
  charge_locked();
  if (t > clock_) {
    waited_ += t - clock_;
    clock_ = t;
  }
}

double SimClock::compute_s() {
  std::lock_guard<std::mutex> lock(mutex_);
  charge_locked();
  return compute_;
}

double SimClock::waited_s() {
  std::lock_guard<std::mutex> lock(mutex_);
  return waited_;
}

}  // namespace gossamer::comm
