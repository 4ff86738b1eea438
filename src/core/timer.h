// Wall-clock stopwatch on the steady clock, in seconds; the current UTC time as text.
#pragma once

#include <chrono>
#include <ctime>
#include <string>

namespace gossamer {

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void reset() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

// The current UTC time in strftime's `format` ("%Y%m%d-%H%M%S": names of files moved aside).
inline std::string utc_now(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, format, &tm));
}

}  // namespace gossamer
