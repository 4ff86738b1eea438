// Index maps and buffer growth shared by SCAPE's files (scape.cpp, scape_mask.cpp). Internal
// to optim; header-only.
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/memory_ops.h"
#include "optim/shard_layout.h"

namespace gossamer::optim::scape_detail {

// Rank-local (packed) indices of a sorted mask to flat indices, in place, walking the rank's
// pieces (in flat = local order). Stays sorted.
inline void local_to_global(const std::vector<ShardPiece>& pieces, uint32_t* idx, size_t n) {
  size_t p = 0;
  for (size_t j = 0; j < n; ++j) {
    while (idx[j] >= pieces[p].local + pieces[p].size()) ++p;
    idx[j] = uint32_t(pieces[p].begin + (idx[j] - pieces[p].local));
  }
}

// The inverse, for a sorted list of flat indices this rank owns.
inline void global_to_local(const std::vector<ShardPiece>& pieces, const uint32_t* idx, size_t n,
                            uint32_t* out) {
  size_t p = 0;
  for (size_t j = 0; j < n; ++j) {
    while (idx[j] >= pieces[p].end) ++p;
    out[j] = uint32_t(pieces[p].local + (idx[j] - pieces[p].begin));
  }
}

// Grows b to n elements when smaller (the mask buffers after loading a denser mask); the
// contents are not kept.
template <class T>
void reserve(Buffer<T>& b, size_t n, const MemoryOps& memory) {
  if (b.size() < n) b = Buffer<T>(n, memory);
}

}  // namespace gossamer::optim::scape_detail
