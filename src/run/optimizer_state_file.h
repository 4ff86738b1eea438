// optimizer.safetensors, the optimizer part of a checkpoint: every state tensor of every rank,
// by the tensor's scope (optim/state_tensor.h) and in its own dtype.
//   sharded      one tensor NAME of the whole flat state (the ranks' slices gathered)
//   summed_rows  one tensor NAME of world x numel elements (the ranks' rows in rank order)
//   per_rank     one tensor NAME@rankR per rank
// Metadata: format "gossamer-optimizer", optimizer (its name), state_format "2", world_size.
// Files written before typed state (no state_format) hold F32 everywhere; integer state
// tensors load from them when every value is an exact integer of the target's range.
// Invariant: a state tensor is restored only when its name, scope, dtype and size agree with
// the file (or convert exactly); anything else is an error naming the file and the tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "optim/optimizer.h"

namespace gossamer::run {

// Writes the state of every rank to `path` (atomically) on rank 0, tensor by tensor as each is
// gathered; `step`, the checkpoint's, goes into its metadata (checkpoint_step,
// run/checkpoint.h). A collective over comm: every rank calls it at the same point, and ranks
// other than 0 only take part in the gathers (their `path` is not used).
void write_optimizer_state(const std::string& path, int64_t step, optim::Optimizer& optimizer,
                           comm::Communicator& comm);

// Fills the optimizer's state tensors for `rank` of `world` from the file, then calls
// state_loaded().
void load_optimizer_state(const std::string& path, optim::Optimizer& optimizer, int rank,
                          int world);

}  // namespace gossamer::run
