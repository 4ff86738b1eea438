// BlockMask (see block_mask.h): uniform initial masks, magnitude prune and random regrow per
// view, the inactive-weights-are-zero invariant and the mask hash.
#include "optim/block_mask.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"
#include "kernels/cpu/block_ops.h"

namespace gossamer::optim {

namespace {

// Streams of the run's seed used by the masks (apart from the model's and the data's).
constexpr uint64_t kInitStream = 0x534D4554'00000000ull;  // + view

// The first `n` entries of `pool` become a uniform sample without replacement (partial
// Fisher-Yates).
void sample_front(std::vector<int32_t>& pool, size_t n, Rng& rng) {
  for (size_t i = 0; i < n; ++i) std::swap(pool[i], pool[i + rng.below(pool.size() - i)]);
}

}  // namespace

BlockMask::BlockMask(const model::ParamLayout& layout, double density, size_t block_size,
                     uint64_t seed)
    : B_(block_size) {
  GOSSAMER_CHECK(B_ >= 1, "block mask: block size %zu", B_);
  const auto& all = layout.views();
  for (size_t i = 0; i < all.size(); ++i) {
    const model::ParamView& v = all[i];
    if (v.kind != model::ParamKind::PARAM_KIND_WEIGHT || !v.name.starts_with("blocks.")) continue;
    const size_t blocks = (v.numel + B_ - 1) / B_;
    GOSSAMER_CHECK(blocks <= size_t(INT32_MAX), "block mask: %s has %zu blocks", v.name.c_str(),
                   blocks);
    const size_t active =
        std::clamp<size_t>(size_t(std::llround(density * double(blocks))), 1, blocks);
    views_.push_back({i, v.offset, v.numel, blocks, active, blocks_.size()});
    sparse_numel_ += v.numel;
    std::vector<int32_t> pool(blocks);
    std::iota(pool.begin(), pool.end(), 0);
    Rng rng(seed, kInitStream + i);
    sample_front(pool, active, rng);
    std::sort(pool.begin(), pool.begin() + active);
    blocks_.insert(blocks_.end(), pool.begin(), pool.begin() + active);
  }
  GOSSAMER_CHECK(!views_.empty(), "block mask: the model has no block matrices to make sparse");
}

size_t BlockMask::slot_elements(const SparseView& v, size_t slot) const {
  const size_t begin = size_t(blocks_[slot]) * B_;
  return std::min(B_, v.numel - begin);
}

size_t BlockMask::active_numel() const {
  size_t n = 0;
  for (const SparseView& v : views_)
    for (size_t s = v.slot0; s < v.slot0 + v.active; ++s) n += slot_elements(v, s);
  return n;
}

void BlockMask::check(const char* what) const {
  for (const SparseView& v : views_) {
    std::vector<uint8_t> seen(v.blocks, 0);
    for (size_t s = v.slot0; s < v.slot0 + v.active; ++s) {
      const int32_t b = blocks_[s];
      GOSSAMER_CHECK(b >= 0 && size_t(b) < v.blocks,
                     "%s: slot %zu holds block %d, outside [0, %zu) of its matrix", what, s, b,
                     v.blocks);
      GOSSAMER_CHECK(!seen[b], "%s: block %d of a matrix is active twice (slot %zu)", what, b, s);
      seen[b] = 1;
    }
  }
}

std::vector<int32_t> BlockMask::inactive_blocks(size_t k) const {
  const SparseView& v = views_[k];
  std::vector<uint8_t> on(v.blocks, 0);
  for (size_t s = v.slot0; s < v.slot0 + v.active; ++s) on[blocks_[s]] = 1;
  std::vector<int32_t> off;
  off.reserve(v.blocks - v.active);
  for (size_t b = 0; b < v.blocks; ++b)
    if (!on[b]) off.push_back(int32_t(b));
  return off;
}

void BlockMask::zero_inactive(float* params) const {
  for (size_t k = 0; k < views_.size(); ++k) {
    const std::vector<int32_t> off = inactive_blocks(k);
    kernels::cpu::zero_blocks(params + views_[k].offset, off.data(), off.size(), B_,
                              views_[k].numel);
  }
}

std::vector<BlockMask::ViewChange> BlockMask::prune_and_regrow(std::span<const double> l1,
                                                               double fraction, uint64_t seed,
                                                               uint64_t stream) {
  GOSSAMER_CHECK(l1.size() == blocks_.size(), "block mask: %zu norms for %zu slots", l1.size(),
                 blocks_.size());
  std::vector<ViewChange> changes;
  for (size_t k = 0; k < views_.size(); ++k) {
    const SparseView& v = views_[k];
    const size_t keep = std::max<size_t>(1, size_t(std::floor((1.0 - fraction) * v.active)));
    const size_t n = std::min(v.active - std::min(keep, v.active), v.blocks - v.active);
    if (n == 0) continue;
    // The n active slots of smallest L1 norm (ties: lower block first), deterministically.
    struct Scored {
      double l1;
      int32_t block;
      size_t slot;
    };
    std::vector<Scored> scored(v.active);
    for (size_t j = 0; j < v.active; ++j) {
      const size_t s = v.slot0 + j;
      scored[j] = {l1[s], blocks_[s], s};
    }
    const auto smaller = [](const Scored& a, const Scored& b) {
      return a.l1 != b.l1 ? a.l1 < b.l1 : a.block < b.block;
    };
    std::nth_element(scored.begin(), scored.begin() + (n - 1), scored.end(), smaller);
    // The blocks inactive before this update, then n of them at random.
    std::vector<int32_t> pool = inactive_blocks(k);
    Rng rng(seed, stream * 4096 + k);
    sample_front(pool, n, rng);
    ViewChange change{k, std::vector<size_t>(n), {}};
    for (size_t j = 0; j < n; ++j) change.slots[j] = scored[j].slot;
    std::sort(change.slots.begin(), change.slots.end());
    for (size_t j = 0; j < n; ++j) change.zeroed.push_back(blocks_[change.slots[j]]);  // pruned
    for (size_t j = 0; j < n; ++j) {
      blocks_[change.slots[j]] = pool[j];
      change.zeroed.push_back(pool[j]);  // regrown (inactive weights are zero already)
    }
    changes.push_back(std::move(change));
  }
  return changes;
}

std::vector<size_t> BlockMask::prune_and_regrow(float* params, double fraction, uint64_t seed,
                                                uint64_t stream) {
  std::vector<double> l1(blocks_.size());
  for (const SparseView& v : views_)
    kernels::cpu::block_l1_norms(l1.data() + v.slot0, params + v.offset, blocks_.data() + v.slot0,
                                 v.active, B_, v.numel);
  std::vector<size_t> changed;
  for (const ViewChange& c : prune_and_regrow(l1, fraction, seed, stream)) {
    const SparseView& v = views_[c.k];
    kernels::cpu::zero_blocks(params + v.offset, c.zeroed.data(), c.zeroed.size(), B_, v.numel);
    changed.insert(changed.end(), c.slots.begin(), c.slots.end());
  }
  return changed;
}

uint64_t BlockMask::hash() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the slots' block indices
  for (int32_t b : blocks_) {
    for (int i = 0; i < 4; ++i) {
      h ^= (uint32_t(b) >> (8 * i)) & 0xFF;
      h *= 1099511628211ull;
    }
  }
  return (h ^ (h >> 48)) & ((uint64_t{1} << 48) - 1);
}

}  // namespace gossamer::optim
