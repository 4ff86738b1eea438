// Validation loss: the mean next-token loss over windows of a non-shuffled loader, always
// starting from the loader's beginning, so every evaluation sees the same tokens.
// Invariant: each window counts once and every predicted token has the same weight (a
// smaller last batch is weighted by its size).
#pragma once

#include <cstdint>
#include <functional>

#include "comm/communicator.h"
#include "data/loader.h"
#include "model/model.h"

namespace gossamer::eval {

struct EvalResult {
  double loss = 0;       // mean cross-entropy per predicted token (nats)
  int64_t tokens = 0;    // predicted tokens (windows x T)
  int64_t windows = 0;   // (T+1)-token windows evaluated
  bool stopped = false;  // `stop` said so on some rank: loss, tokens and windows are not valid
};

// batches > 0: the first batches x B x ranks windows (fewer if the loader has fewer), the same
// windows whatever the split of a global batch into ranks x B.
// batches == 0: every window of the loader's first epoch exactly once, the last batch holding
// the remainder (num_windows mod B). inputs/targets hold B x T tokens.
// With a communicator of several ranks the windows are shared out (rounds of size() x B, rank
// r taking the r-th B of each) and every rank returns the same result.
// stop (optional) is asked before every batch; once it says true the rank evaluates no more,
// and every rank returns stopped (the ranks still meet in the one collective at the end, so a
// rank that stops early never leaves the others waiting).
EvalResult evaluate(model::Model& model, data::DataLoader& loader, int B, int64_t batches,
                    int32_t* inputs, int32_t* targets, comm::Communicator* comm = nullptr,
                    const std::function<bool()>& stop = {});

}  // namespace gossamer::eval
