// The median of a sample: the one definition every benchmark table and sweep summary uses.
// Invariant: the middle value of an odd-sized sample, the mean of the two middle values of an
// even-sized one, NaN for an empty one. The argument is a copy: the caller's order is kept.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace gossamer {

inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace gossamer
