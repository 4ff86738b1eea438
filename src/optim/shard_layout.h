// ShardLayout: which rank owns which elements of the flat parameter space [0, total) under
// ZeRO-style sharding (DataParallel, Scape). The space is cut into buckets of bucket_size
// elements (the last one may be shorter), and every bucket is split over the ranks in rank
// order, balanced: of bucket [B, B + n), rank r owns [B + n * r / W, B + n * (r + 1) / W) (as in
// Megatron's distributed optimizer, so every rank owns a slice of every bucket and each bucket's
// reduce-scatter sends the same amount to every rank). With a single bucket (bucket_size >=
// total, the default) rank r owns one contiguous slice, the layout of the first versions.
// A rank's parts ("pieces"), in flat order, lie back to back in its local shard buffers.
// Invariant: every element is owned by exactly one rank; within every bucket the ranks' parts
// differ by at most one element; every rank derives the same layout from (total, world,
// bucket_size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace gossamer::optim {

// Rank-local view of one bucket's part: flat elements [begin, end) at local offset `local`.
struct ShardPiece {
  size_t begin = 0, end = 0, local = 0;
  size_t size() const { return end - begin; }
};

class ShardLayout {
 public:
  static constexpr size_t kOneBucket = SIZE_MAX;
  ShardLayout(size_t total, int world, size_t bucket_size = kOneBucket);

  int world() const { return world_; }
  size_t total() const { return total_; }
  size_t bucket_size() const { return bucket_size_; }
  size_t num_buckets() const { return num_buckets_; }
  size_t bucket_begin(size_t b) const;
  size_t bucket_end(size_t b) const;
  // Rank r's part of bucket b, as flat [begin, end) and its local offset (may be empty).
  ShardPiece piece(int rank, size_t b) const;
  // Elements of bucket b owned by each rank, in rank order: a per-bucket reduce-scatter's or
  // all-gather's counts.
  std::vector<size_t> bucket_counts(size_t b) const;
  // Elements rank r owns in all, and those numbers in rank order.
  size_t size(int rank) const { return sizes_[size_t(rank)]; }
  const std::vector<size_t>& counts() const { return sizes_; }
  // The rank owning flat element i, and i's offset in that rank's local buffers.
  int owner(size_t i) const;
  size_t local_offset(size_t i) const;
  // The flat element at local offset `local` of rank r's buffers (local < size(r)).
  size_t global_index(int rank, size_t local) const;
  // Rank r's non-empty pieces, in flat (= local) order.
  std::vector<ShardPiece> pieces(int rank) const;
  // How many elements of [a, b) rank r owns.
  size_t overlap(int rank, size_t a, size_t b) const;
  // One contiguous slice per rank (a single bucket): begin()/end() describe it.
  bool contiguous() const { return num_buckets_ <= 1; }
  size_t begin(int rank) const;  // contiguous layouts only
  size_t end(int rank) const;    // contiguous layouts only

 private:
  // Elements of rank r's part of a full bucket.
  size_t full_part(int rank) const;
  // Offset, within bucket b of n elements, of rank r's part.
  size_t part_begin(size_t n, int r) const;

  size_t total_;
  int world_;
  size_t bucket_size_;
  size_t num_buckets_;
  std::vector<size_t> sizes_;  // per rank
};

// What one rank updates: its pieces of the flat space (packed back to back in its local
// buffers) and the layout they come from. `whole` is every element on every rank (replicated
// updates, one process); `of` is rank r's share of a ZeRO layout.
// Invariant: the pieces are disjoint, in flat order, and their local offsets tile [0, size).
struct OwnedShard {
  std::shared_ptr<const ShardLayout> layout;  // null for `whole`
  int rank = 0;
  std::vector<ShardPiece> pieces;
  size_t size = 0;   // elements owned
  size_t total = 0;  // elements of the flat space

  static OwnedShard whole(size_t total);
  static OwnedShard of(std::shared_ptr<const ShardLayout> layout, int rank);
  bool replicated() const { return layout == nullptr; }
  // Flat index of local offset `local`.
  size_t global_index(size_t local) const;
};

}  // namespace gossamer::optim
