// LocalRounds: the part DiLoCo, GASLoC and gossip share. Every rank trains its own replica with
// an inner AdamW (local_adamw.h: local clipping, per-rank moments that persist across rounds and
// are never communicated) and, every round, hands the replica to the method's outer update
// (end_round). A round lasts max(local_steps) trainer steps; rank r computes in the first
// local_steps.of(r) of them and idles in the rest (Optimizer::computes_step), and its inner
// AdamW counts only the steps it took. The round structure is a function of the step number
// alone, so a resumed run continues the same rounds.
// Invariant: between round ends step() issues no collective; evaluation and checkpoints see
// the method's evaluation weights, and every outer tensor is per-rank checkpoint state.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "optim/local_adamw.h"
#include "optim/local_steps_config.h"

namespace gossamer::optim {

class LocalRounds : public LocalAdamW {
 public:
  const char* name() const override { return name_; }
  bool computes_step(int64_t t) const override;
  StepResult step(const StepContext& ctx) override;
  std::vector<StateTensor> state() override;
  std::vector<std::pair<std::string, double>> step_metrics() const override;

  int64_t round_length() const { return slots_; }
  // Whether update t (1-based) ends a round.
  bool ends_round(int64_t t) const { return t % slots_ == 0; }

 protected:
  // `key` names the local_steps setting in errors ("optimizer.gasloc.local_steps").
  LocalRounds(const OptimizerSetup& setup, const char* name, const LocalSteps& steps,
              const std::string& key);

  // The outer update after round `round` (1-based) ended: reads this rank's replica
  // (params_), writes the next round's starting weights into it.
  virtual void end_round(int64_t round) = 0;
  // The method's outer tensors (per-rank scope), appended to the inner state.
  virtual std::vector<StateTensor> outer_state() = 0;
  // Figures of the last round end for step_metrics().
  virtual void round_metrics(std::vector<std::pair<std::string, double>>& out) const {}

  // DiLoCo's outer round (diloco.h): delta = anchor - x into `scratch`, averaged over the ranks
  // by one all-reduce, m <- mu m + delta, anchor <- anchor - lr (delta + mu m), x <- anchor.
  // Every array is layout-sized and in the op table's memory.
  void nesterov_on_mean(float* anchor, float* momentum, float* scratch, double lr, double mu);

  const char* name_;
  LocalSteps steps_;
  int64_t slots_;       // trainer steps per round: max(local_steps)
  uint64_t seed_;       // train.seed: random peers
  int64_t last_t_ = 0;  // the last update taken
  bool last_ended_round_ = false;
};

}  // namespace gossamer::optim
