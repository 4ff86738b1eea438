// ShardedOptimizer: the bookkeeping every optimizer shares that splits the flat parameter space
// over the ranks (DataParallel, Scape, and later methods): the pieces of its setup, the ZeRO
// split of the space (ShardLayout: every bucket of parallel.bucket_mb, or of the method's own
// size, split over the ranks) and
// what this rank updates (own_: its pieces of every bucket, or everything).
// Invariant: own_ is this rank's share of shards_ when sharded, the whole space otherwise;
// every rank derives the same split from (total_, world_, bucket size).
#pragma once

#include <cstddef>
#include <memory>

#include "optim/optimizer.h"
#include "optim/shard_layout.h"

namespace gossamer::optim {

class ShardedOptimizer : public Optimizer {
 protected:
  // bucket_elements: the layout's bucket (0: parallel.bucket_mb, the communication bucket).
  ShardedOptimizer(const OptimizerSetup& setup, bool sharded, size_t bucket_elements = 0)
      : cfg_(setup.config),
        ops_(setup.ops),
        comm_(setup.comm),
        control_(setup.control),
        world_(setup.comm.size()),
        rank_(setup.comm.rank()),
        total_(setup.layout.total()),
        shards_(std::make_shared<const ShardLayout>(
            total_, world_,
            bucket_elements > 0 ? bucket_elements : setup.parallel.bucket_elements())),
        own_(sharded ? OwnedShard::of(shards_, rank_) : OwnedShard::whole(total_)) {}

  size_t owned() const { return own_.size; }

  OptimizerConfig cfg_;
  const kernels::OpTable& ops_;
  comm::Communicator& comm_;     // the optimizer's buffers
  comm::Communicator& control_;  // small host values: flags, norms
  int world_, rank_;
  size_t total_;
  std::shared_ptr<const ShardLayout> shards_;  // the ZeRO split of the flat space
  OwnedShard own_;                             // what this rank updates
};

}  // namespace gossamer::optim
