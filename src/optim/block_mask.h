// BlockMask: which blocks of the sparse matrices are active, for dynamic sparse training
// (docs/SMET.md). A sparse matrix is a view of the flat parameter space cut into blocks of B
// consecutive elements (the last one cut at the view's end); its active blocks occupy a
// contiguous range of slots, one block index per slot, and the optimizer keeps its compact
// state (moments, gradients, step counts) by slot. A topology update prunes the active blocks
// of smallest L1 norm of every view and puts blocks regrown at random into the freed slots, so
// the slots of a view never move and their number never changes.
// Invariants: within a view the active blocks are distinct and inside [0, blocks); the count
// per view is fixed at construction; every choice depends only on the seed, the step and the
// parameter values, so ranks with identical parameters hold identical masks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/param_layout.h"

namespace gossamer::optim {

struct SparseView {
  size_t view;    // index into the layout's views
  size_t offset;  // flat offset of the view
  size_t numel;   // elements of the view
  size_t blocks;  // ceil(numel / B)
  size_t active;  // active blocks (slots)
  size_t slot0;   // first slot of the view
};

class BlockMask {
 public:
  // The views of kind PARAM_KIND_WEIGHT inside blocks.* are sparse; each keeps
  // max(1, round(density x blocks)) blocks, chosen uniformly at random from `seed`.
  BlockMask(const model::ParamLayout& layout, double density, size_t block_size, uint64_t seed);

  size_t block_size() const { return B_; }
  const std::vector<SparseView>& views() const { return views_; }
  size_t slots() const { return blocks_.size(); }
  // The block index of every slot (a checkpoint restores them here; check() validates).
  std::span<int32_t> blocks() { return blocks_; }
  std::span<const int32_t> blocks() const { return blocks_; }
  // Elements of the slot's block (B, or less for a view's cut last block).
  size_t slot_elements(const SparseView& v, size_t slot) const;
  // Sum of all views' numel, and of the elements of the active blocks.
  size_t sparse_numel() const { return sparse_numel_; }
  size_t active_numel() const;

  // Throws gossamer::Error naming `what` when a view's blocks are out of range or repeated.
  void check(const char* what) const;
  // The inactive blocks of views()[k], in increasing order.
  std::vector<int32_t> inactive_blocks(size_t k) const;
  // Sets the weights of every inactive block to zero (host memory; the optimizer does the same
  // through the op table with inactive_blocks()).
  void zero_inactive(float* params) const;

  // What one topology update changed in views()[k]: its slots that changed (increasing) and the
  // blocks whose weights must become zero (the pruned ones, then the regrown ones).
  struct ViewChange {
    size_t k;
    std::vector<size_t> slots;
    std::vector<int32_t> zeroed;
  };
  // One topology update from the L1 norm of every slot's block (l1[s], slots() of them): in each
  // view, prunes the n = min(active - keep, inactive) active blocks of smallest L1 norm (keep =
  // max(1, floor((1 - fraction) x active)); ties by block index) and regrows n blocks drawn
  // uniformly from those inactive before the update (stream `stream` of `seed`), into the
  // pruned blocks' slots. Returns the views that changed, in view order.
  std::vector<ViewChange> prune_and_regrow(std::span<const double> l1, double fraction,
                                           uint64_t seed, uint64_t stream);
  // The same on host memory: the norms of `params`, and the zeroed blocks set to zero there.
  // Returns the slots that changed, in increasing order.
  std::vector<size_t> prune_and_regrow(float* params, double fraction, uint64_t seed,
                                       uint64_t stream);

  // A 48-bit hash of the blocks of every slot (exact in a double; equal masks, equal hashes).
  uint64_t hash() const;

 private:
  size_t B_;
  std::vector<SparseView> views_;
  std::vector<int32_t> blocks_;
  size_t sparse_numel_ = 0;
};

}  // namespace gossamer::optim
