// ShardLayout: see shard_layout.h.
#include "optim/shard_layout.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::optim {

ShardLayout::ShardLayout(size_t total, int world) {
  GOSSAMER_CHECK(world > 0, "shard layout: world size %d", world);
  for (int r = 0; r <= world; ++r)
    begins_.push_back(size_t((unsigned __int128)total * unsigned(r) / unsigned(world)));
  for (int r = 0; r < world; ++r) counts_.push_back(begins_[size_t(r) + 1] - begins_[size_t(r)]);
}

size_t ShardLayout::overlap(int rank, size_t a, size_t b) const {
  const size_t lo = std::max(a, begin(rank)), hi = std::min(b, end(rank));
  return lo < hi ? hi - lo : 0;
}

}  // namespace gossamer::optim
