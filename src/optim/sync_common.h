// The steps every synchronising optimizer shares (DataParallel, Scape, and later methods):
// agreeing on non-finite gradients before anything is updated, the global gradient norm from
// the ranks' partial sums, clipping by it, and the all-gather of updated parameter shards.
// Written once so that every method stops, clips and distributes in the same way.
// Invariant: every function here is called by all ranks at the same point of a step (they are
// collectives over `control` or `comm`), and none communicates at world size 1.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/buffer.h"
#include "kernels/ops.h"
#include "optim/shard_layout.h"

namespace gossamer::optim {

// The op table's run list (kernels/copy_run.h, in its memory) moving `pieces` between a flat
// buffer and a packed one that holds piece p at p.local: flat -> packed, or packed -> flat. One
// copy_runs / accumulate_runs call then moves every piece (a sharded step's packs).
enum class PieceMove { TO_PACKED, FROM_PACKED };
Buffer<kernels::CopyRun> piece_runs(std::span<const ShardPiece> pieces, PieceMove move,
                                    const MemoryOps& memory);

// The local sums of squares of what a step sends, one per launch, kept in the op table's memory
// (ops.sum_squares_to: no host wait per launch on a GPU) and read back once: their sum in launch
// order and whether any is non-finite, for agree_gradients_finite and the norm.
class LaunchedSums {
 public:
  LaunchedSums() = default;
  LaunchedSums(size_t max_launches, const MemoryOps& memory)
      : dev_(max_launches, memory), host_(max_launches, 0.0) {}
  double* slot(size_t j) { return dev_.data() + j; }  // launch j's sum goes here
  // Adds launches [0, n) to *sum in order; sets *bad when one is not finite.
  void tally(size_t n, double* sum, bool* bad) {
    dev_.download(host_.data(), n);
    for (size_t j = 0; j < n; ++j) {
      *sum += host_[j];
      if (!std::isfinite(host_[j])) *bad = true;
    }
  }

 private:
  Buffer<double> dev_;
  std::vector<double> host_;
};

// Every rank learns whether any rank saw non-finite local gradients (one 4-byte all-reduce);
// if one did, all throw the same CollectiveError naming the lowest such rank and step t, before
// any parameter changed.
void agree_gradients_finite(comm::Communicator& control, bool locally_finite, int64_t t);

// Element-wise sum over ranks of a few float values, in place (one all-reduce).
void sum_over_ranks(comm::Communicator& control, std::span<float> values);

// Scales g[0, n) by max_norm / (norm + 1e-6) when that is below 1 (max_norm 0: never clips).
void clip_to_norm(const kernels::OpTable& ops, float* g, size_t n, double norm, double max_norm);
// The same on the owned pieces of the flat buffer g.
void clip_owned_to_norm(const kernels::OpTable& ops, float* g, const OwnedShard& own, double norm,
                        double max_norm);
// Sum of squares of the owned pieces of the flat buffer x.
double sum_squares_owned(const kernels::OpTable& ops, const float* x, const OwnedShard& own);

// Each rank's updated pieces of `params` (the flat buffer, split by `shards`) to every rank: one
// all-gather per bucket, all in flight at once.
void all_gather_shards(comm::Communicator& comm, std::span<float> params, const ShardLayout& shards,
                       int rank);

}  // namespace gossamer::optim
