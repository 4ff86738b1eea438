// The steps every synchronising optimizer shares (DataParallel, Scape, and later methods):
// agreeing on non-finite gradients before anything is updated, the global gradient norm from
// the ranks' partial sums, clipping by it, and the all-gather of updated parameter shards.
// Written once so that every method stops, clips and distributes in the same way.
// Invariant: every function here is called by all ranks at the same point of a step (they are
// collectives over `control` or `comm`), and none communicates at world size 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "comm/communicator.h"
#include "kernels/ops.h"
#include "optim/shard_layout.h"

namespace gossamer::optim {

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
