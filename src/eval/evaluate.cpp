// Implementation of evaluate(): each rank sums its windows' losses weighted by their count;
// the per-rank sums are gathered and added in rank order.
#include "eval/evaluate.h"

#include <algorithm>

#include "comm/gather_values.h"

namespace gossamer::eval {

EvalResult evaluate(model::Model& model, data::DataLoader& loader, int B, int64_t batches,
                    int32_t* inputs, int32_t* targets, comm::Communicator* comm,
                    const std::function<bool()>& stop) {
  const int world = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  const uint64_t available = loader.num_windows();
  const uint64_t wanted =
      batches == 0 ? available : uint64_t(batches) * uint64_t(B) * uint64_t(world);
  const uint64_t n_windows = std::min(wanted, available);
  double weighted_sum = 0;
  bool stopped = false;
  const uint64_t round = uint64_t(world) * uint64_t(B);
  for (uint64_t start = 0; start < n_windows; start += round) {
    const uint64_t first = start + uint64_t(rank) * uint64_t(B);
    if (first >= n_windows) break;
    if (stop && stop()) {
      stopped = true;
      break;
    }
    const int b = int(std::min<uint64_t>(uint64_t(B), n_windows - first));
    loader.set_position({0, first});
    loader.next_batch(0, 1, b, inputs, targets);
    weighted_sum += double(model.eval_loss(inputs, targets, b, loader.seq_len())) * b;
  }
  if (world > 1) {
    const double mine[2] = {weighted_sum, stopped ? 1.0 : 0.0};
    const std::vector<double> all = comm::all_gather_doubles(*comm, mine);
    weighted_sum = 0;
    for (int r = 0; r < world; ++r) {
      weighted_sum += all[size_t(2 * r)];
      stopped = stopped || all[size_t(2 * r + 1)] != 0.0;
    }
  }
  EvalResult r;
  r.stopped = stopped;
  r.windows = int64_t(n_windows);
  r.loss = n_windows > 0 ? weighted_sum / double(n_windows) : 0.0;
  r.tokens = r.windows * loader.seq_len();
  return r;
}

}  // namespace gossamer::eval
