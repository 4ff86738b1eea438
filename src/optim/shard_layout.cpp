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

size_t ShardLayout::full_part(int rank) const {
  return part_begin(bucket_size_, rank + 1) - part_begin(bucket_size_, rank);
}

ShardPiece ShardLayout::piece(int rank, size_t b) const {
  const size_t B = bucket_begin(b), n = bucket_end(b) - B;
  // Local offset: every earlier bucket's part of this rank. Buckets before the last are full,
  // so their parts have the same size.
  ShardPiece p;
  p.begin = B + part_begin(n, rank);
  p.end = B + part_begin(n, rank + 1);
  p.local = b * full_part(rank);
  return p;
}

size_t ShardLayout::global_index(int rank, size_t local) const {
  GOSSAMER_CHECK(local < size(rank), "shard layout: local offset %zu of %zu on rank %d", local,
                 size(rank), rank);
  const size_t full = full_part(rank);
  // Every bucket but the last holds `full` of this rank's elements (none when full == 0: then
  // only the last bucket can hold any).
  const size_t b = full == 0 ? num_buckets_ - 1 : std::min(local / full, num_buckets_ - 1);
  const ShardPiece p = piece(rank, b);
  return p.begin + (local - p.local);
}

std::vector<ShardPiece> ShardLayout::pieces(int rank) const {
  std::vector<ShardPiece> out;
  for (size_t b = 0; b < num_buckets_; ++b) {
    const ShardPiece p = piece(rank, b);
    if (p.size() > 0) out.push_back(p);
  }
  return out;
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

OwnedShard OwnedShard::whole(size_t total) {
  OwnedShard o;
  if (total > 0) o.pieces.push_back({0, total, 0});
  o.size = o.total = total;
  return o;
}

OwnedShard OwnedShard::of(std::shared_ptr<const ShardLayout> layout, int rank) {
  GOSSAMER_CHECK(layout != nullptr && rank >= 0 && rank < layout->world(),
                 "owned shard: rank %d of a layout of %d", rank, layout ? layout->world() : 0);
  OwnedShard o;
  o.pieces = layout->pieces(rank);
  o.size = layout->size(rank);
  o.total = layout->total();
  o.rank = rank;
  o.layout = std::move(layout);
  return o;
}

size_t OwnedShard::global_index(size_t local) const {
  return layout ? layout->global_index(rank, local) : local;
}

}  // namespace gossamer::optim
