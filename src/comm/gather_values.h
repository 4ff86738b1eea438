// all_gather_doubles(): every rank's few double values, on every rank, in rank order. The
// bytes travel as I64 (no reduction), so sums taken from the result in rank order are
// bit-identical on all ranks.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "comm/communicator.h"

namespace gossamer::comm {

// Returns size() * values.size() doubles: rank 0's values, then rank 1's, ... Every rank must
// pass the same number of values.
inline std::vector<double> all_gather_doubles(Communicator& comm, std::span<const double> values) {
  std::vector<double> out(values.size() * size_t(comm.size()));
  if (comm.size() == 1) {
    std::memcpy(out.data(), values.data(), values.size_bytes());
    return out;
  }
  const std::vector<size_t> counts(size_t(comm.size()), values.size());
  static_assert(sizeof(double) == sizeof(int64_t));
  comm.all_gather(values.data(), out.data(), counts, DType::I64).wait();
  return out;
}

}  // namespace gossamer::comm
