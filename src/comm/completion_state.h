// CompletionState: the WorkState of backends whose operations a worker thread completes (mpi,
// the zip decorator): the worker calls complete() once, with an error message or "", and
// waiters block on a condition variable. Invariant: complete() is called exactly once; an error
// is rethrown by every wait_for() after it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "comm/communicator.h"
#include "core/error.h"

namespace gossamer::comm {

class CompletionState final : public WorkState {
 public:
  bool wait_for(double seconds) override {
    std::unique_lock<std::mutex> lock(mutex_);
    auto ready = [this] { return done_; };
    if (seconds <= 0)
      cv_.wait(lock, ready);
    else if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), ready))
      return false;
    if (!error_.empty()) throw Error(error_);
    return true;
  }
  bool done() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  double duration() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_ ? duration_ : std::numeric_limits<double>::quiet_NaN();
  }
  // Marks the operation complete (error: "" on success) and wakes every waiter.
  void complete(std::string error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      error_ = std::move(error);
      duration_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - issued_).count();
    }
    cv_.notify_all();
  }

 private:
  const std::chrono::steady_clock::time_point issued_ = std::chrono::steady_clock::now();
  double duration_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string error_;
};

}  // namespace gossamer::comm
