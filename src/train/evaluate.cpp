// Implementation of evaluate(): resets the loader, sums per-batch mean losses weighted by the
// batch's window count.
#include "train/evaluate.h"

#include <algorithm>

namespace gossamer::train {

EvalResult evaluate(model::Model& model, data::DataLoader& loader, int B, int64_t batches,
                    int32_t* inputs, int32_t* targets) {
  const uint64_t available = loader.num_windows();
  const uint64_t wanted = batches == 0 ? available : uint64_t(batches) * uint64_t(B);
  const uint64_t n_windows = std::min(wanted, available);
  loader.set_position({});
  double weighted_sum = 0;
  for (uint64_t done = 0; done < n_windows;) {
    const int b = int(std::min<uint64_t>(uint64_t(B), n_windows - done));
    loader.next_batch(0, 1, b, inputs, targets);
    weighted_sum += double(model.forward(inputs, targets, b, loader.seq_len())) * b;
    done += uint64_t(b);
  }
  EvalResult r;
  r.windows = int64_t(n_windows);
  r.loss = n_windows > 0 ? weighted_sum / double(n_windows) : 0.0;
  r.tokens = r.windows * loader.seq_len();
  return r;
}

}  // namespace gossamer::train
