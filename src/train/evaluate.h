// Validation loss: the mean loss over `batches` micro-batches of a non-shuffled loader,
// always starting from the loader's beginning, so every evaluation sees the same tokens.
#pragma once

#include <cstdint>

#include "data/loader.h"
#include "model/model.h"

namespace gossamer::train {

struct EvalResult {
  double loss = 0;
  int64_t tokens = 0;
};

// batches == 0: every complete micro-batch of the loader's first epoch.
EvalResult evaluate(model::Model& model, data::DataLoader& loader, int B, int64_t batches,
                    int32_t* inputs, int32_t* targets);

}  // namespace gossamer::train
