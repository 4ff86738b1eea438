// ShardedOptimizer: the bookkeeping every optimizer shares that splits the flat parameter space
// over the ranks (DataParallel, Scape, and later methods): the pieces of its setup, the ZeRO
// split of the space (ShardLayout) and the slice [lo_, hi_) this rank updates.
// Invariant: [lo_, hi_) is this rank's shard when sharded, the whole space [0, total_)
// otherwise; every rank derives the same split from (total_, world_).
#pragma once

#include <cstddef>

#include "optim/optimizer.h"
#include "optim/shard_layout.h"

namespace gossamer::optim {

class ShardedOptimizer : public Optimizer {
 protected:
  ShardedOptimizer(const OptimizerSetup& setup, bool sharded)
      : cfg_(setup.config),
        ops_(setup.ops),
        comm_(setup.comm),
        control_(setup.control),
        world_(setup.comm.size()),
        rank_(setup.comm.rank()),
        total_(setup.layout.total()),
        shards_(total_, world_),
        lo_(sharded ? shards_.begin(rank_) : 0),
        hi_(sharded ? shards_.end(rank_) : total_) {}

  size_t owned() const { return hi_ - lo_; }

  OptimizerConfig cfg_;
  const kernels::OpTable& ops_;
  comm::Communicator& comm_;     // the optimizer's buffers
  comm::Communicator& control_;  // small host values: flags, norms
  int world_, rank_;
  size_t total_;
  ShardLayout shards_;  // the ZeRO split of the flat space
  size_t lo_, hi_;      // the slice this rank updates
};

}  // namespace gossamer::optim
