// ShardLayout: see shard_layout.h. Everything is computed from (total, world, bucket_size) in
// O(1) per bucket; nothing per element is stored.
#include "optim/shard_layout.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::optim {

ShardLayout::ShardLayout(size_t total, int world, size_t bucket_size)
    : total_(total),
      world_(world),
      bucket_size_(std::min(bucket_size, std::max<size_t>(total, 1))) {
  GOSSAMER_CHECK(world > 0, "shard layout: world size %d", world);
  GOSSAMER_CHECK(bucket_size > 0, "shard layout: bucket size 0");
  num_buckets_ = total == 0 ? 0 : (total + bucket_size_ - 1) / bucket_size_;
  sizes_.assign(size_t(world), 0);
  for (size_t b = 0; b < num_buckets_; ++b) {
    const std::vector<size_t> c = bucket_counts(b);
    for (int r = 0; r < world; ++r) sizes_[size_t(r)] += c[size_t(r)];
  }
}

size_t ShardLayout::part_begin(size_t n, int r) const {
  return size_t((unsigned __int128)n * unsigned(r) / unsigned(world_));
}

size_t ShardLayout::bucket_begin(size_t b) const {
  return std::min(total_, b * bucket_size_);
}

size_t ShardLayout::bucket_end(size_t b) const {
  return std::min(total_, (b + 1) * bucket_size_);
}

ShardPiece ShardLayout::piece(int rank, size_t b) const {
  const size_t B = bucket_begin(b), n = bucket_end(b) - B;
  // Local offset: every earlier bucket's part of this rank. Buckets before the last are full,
  // so their parts have the same size.
  const size_t full_part = part_begin(bucket_size_, rank + 1) - part_begin(bucket_size_, rank);
  ShardPiece p;
  p.begin = B + part_begin(n, rank);
  p.end = B + part_begin(n, rank + 1);
  p.local = b * full_part;
  return p;
}

std::vector<size_t> ShardLayout::bucket_counts(size_t b) const {
  const size_t n = bucket_end(b) - bucket_begin(b);
  std::vector<size_t> c(static_cast<size_t>(world_));
  for (int r = 0; r < world_; ++r) c[size_t(r)] = part_begin(n, r + 1) - part_begin(n, r);
  return c;
}

int ShardLayout::owner(size_t i) const {
  GOSSAMER_CHECK(i < total_, "shard layout: element %zu of %zu", i, total_);
  const size_t b = i / bucket_size_, B = bucket_begin(b), n = bucket_end(b) - B, off = i - B;
  int r = int((unsigned __int128)off * unsigned(world_) / n);  // close; at most one too high
  while (r > 0 && part_begin(n, r) > off) --r;
  while (r + 1 < world_ && part_begin(n, r + 1) <= off) ++r;
  return r;
}

size_t ShardLayout::local_offset(size_t i) const {
  const int r = owner(i);
  const ShardPiece p = piece(r, i / bucket_size_);
  return p.local + (i - p.begin);
}

size_t ShardLayout::overlap(int rank, size_t a, size_t b) const {
  size_t n = 0;
  if (a >= b || num_buckets_ == 0) return 0;
  for (size_t k = a / bucket_size_; k < num_buckets_ && bucket_begin(k) < b; ++k) {
    const ShardPiece p = piece(rank, k);
    const size_t lo = std::max(a, p.begin), hi = std::min(b, p.end);
    n += lo < hi ? hi - lo : 0;
  }
  return n;
}

size_t ShardLayout::begin(int rank) const {
  GOSSAMER_CHECK(contiguous(), "shard layout: begin() of a layout with %zu buckets", num_buckets_);
  return num_buckets_ == 0 ? 0 : piece(rank, 0).begin;
}

size_t ShardLayout::end(int rank) const {
  GOSSAMER_CHECK(contiguous(), "shard layout: end() of a layout with %zu buckets", num_buckets_);
  return num_buckets_ == 0 ? 0 : piece(rank, 0).end;
}

}  // namespace gossamer::optim
