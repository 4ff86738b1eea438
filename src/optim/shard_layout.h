// ShardLayout: the balanced contiguous split of the flat parameter space [0, total) over the
// ranks that ZeRO-style sharding (DataParallel, Scape) uses: rank r owns
// [total * r / world, total * (r + 1) / world).
// Invariant: begin(0) = 0, end(world - 1) = total, end(r) = begin(r + 1), and the slice sizes
// differ by at most one element; every rank computes the same layout from (total, world).
#pragma once

#include <cstddef>
#include <vector>

namespace gossamer::optim {

class ShardLayout {
 public:
  ShardLayout(size_t total, int world);

  int world() const { return int(counts_.size()); }
  size_t total() const { return begins_.back(); }
  size_t begin(int rank) const { return begins_[size_t(rank)]; }
  size_t end(int rank) const { return begins_[size_t(rank) + 1]; }
  size_t size(int rank) const { return counts_[size_t(rank)]; }
  // Slice sizes in rank order: the counts of a reduce-scatter or all-gather over the space.
  const std::vector<size_t>& counts() const { return counts_; }
  // How many elements of [a, b) rank r owns.
  size_t overlap(int rank, size_t a, size_t b) const;

 private:
  std::vector<size_t> begins_;  // world + 1 entries
  std::vector<size_t> counts_;  // world entries
};

}  // namespace gossamer::optim
