// DiLoCo (Douillard et al., arXiv 2311.08105; ALGORITHMS.md 5.1, docs/GASLOC.md): H inner
// AdamW steps on each rank's replica and data, then one all-reduce of the pseudo-gradient
// delta = anchor - replica, averaged, and an outer Nesterov step on the anchor (PyTorch SGD with
// nesterov=True): m <- mu m + delta; anchor <- anchor - lr_out (delta + mu m); every replica
// restarts from the new anchor. Inner state persists across rounds and is never sent.
// Invariant: the anchor and the outer momentum are identical on every rank, and so are the
// replicas at each round end; evaluation and model.safetensors see the anchor.
#pragma once

#include <memory>

#include "core/buffer.h"
#include "optim/local_rounds.h"

namespace gossamer::optim {

std::unique_ptr<Optimizer> make_diloco(const OptimizerSetup& setup);

class Diloco final : public LocalRounds {
 public:
  explicit Diloco(const OptimizerSetup& setup);

  Replicas replicas() const override { return Replicas::REPLICAS_IDENTICAL_AT_ROUND_END; }
  bool replicas_identical_now() const override { return last_ended_round_ || last_t_ == 0; }
  size_t state_bytes() const override;
  bool evaluation_weights(std::span<float> out) override;

 private:
  void on_attach() override;
  void end_round(int64_t round) override;
  std::vector<StateTensor> outer_state() override;
  float* average_scratch() override { return delta_.data(); }  // free between rounds

  double outer_lr_, outer_momentum_;
  Buffer<float> anchor_, momentum_, delta_;  // in the op table's memory
};

}  // namespace gossamer::optim
