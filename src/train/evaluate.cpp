// Implementation of evaluate(): resets the loader, averages per-batch mean losses.
#include "train/evaluate.h"

#include <algorithm>

namespace gossamer::train {

EvalResult evaluate(model::Model& model, data::DataLoader& loader, int B, int64_t batches,
                    int32_t* inputs, int32_t* targets) {
  const int64_t available = int64_t(loader.num_windows() / B);
  const int64_t n = batches == 0 ? available : std::min(batches, available);
  loader.set_position({});
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    loader.next_batch(0, 1, B, inputs, targets);
    sum += model.forward(inputs, targets, B, loader.seq_len());
  }
  EvalResult r;
  r.loss = n > 0 ? sum / double(n) : 0.0;
  r.tokens = n * B * loader.seq_len();
  return r;
}

}  // namespace gossamer::train
