// CopyRun: one run of a piece-wise move between two buffers (kernels/ops.h's copy_runs and
// accumulate_runs): n elements from src + src_offset to dst + dst_offset. A list of runs is
// built once (a sharded optimizer's pieces) and kept in the op table's memory, so that moving
// thousands of pieces is one op call, not one copy per piece.
// Invariant: within one call the runs' destinations are disjoint.
#pragma once

#include <cstdint>

namespace gossamer::kernels {

struct CopyRun {
  uint64_t dst_offset = 0, src_offset = 0, n = 0;
};

}  // namespace gossamer::kernels
