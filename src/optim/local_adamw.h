// local_adamw: every rank trains its own replica with AdamW on its own data and never
// communicates during training: the lower bound the decentralised methods (DiLoCo, GASLoC) are
// measured against, and the simplest optimizer whose replicas are independent. Evaluation and
// the checkpoint's model.safetensors see the average of the replicas (one all-reduce at
// evaluation and checkpoint cadence); each rank's replica and AdamW state are per-rank
// checkpoint state, so a run resumes at the same world size only.
// Invariant: step() issues no collective; at world size 1 it equals adamw bit for bit.
#pragma once

#include <memory>

#include "core/buffer.h"
#include "optim/optimizer.h"
#include "optim/sharded_optimizer.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

// The registry's factory.
std::unique_ptr<Optimizer> make_local_adamw(const OptimizerSetup& setup);

// Also the inner optimizer of the methods with rounds of local steps (local_rounds.h).
class LocalAdamW : public ShardedOptimizer {
 public:
  explicit LocalAdamW(const OptimizerSetup& setup);

  const char* name() const override { return "local_adamw"; }
  Replicas replicas() const override { return Replicas::REPLICAS_INDEPENDENT; }
  StepResult step(const StepContext& ctx) override;
  std::vector<StateTensor> state() override;
  void state_loaded() override { loaded_ = true; }
  size_t state_bytes() const override { return rule_->state_bytes(); }
  bool evaluation_weights(std::span<float> out) override;
  // Its replica, state and outer buffers live in the op table's memory.
  bool supports_device_memory() const override { return true; }

 protected:
  void on_attach() override;
  // Writes the average of the ranks' replicas into out (one all-reduce; a copy at world 1).
  void average_replicas(std::span<float> out);
  // A layout-sized vector in the op table's memory that average_replicas may overwrite (device
  // memory only): a method's own scratch, or null for average_, allocated at attach().
  virtual float* average_scratch() { return nullptr; }

  std::unique_ptr<UpdateRule> rule_;
  HostBuffer<float> replica_;  // a checkpoint's replica, until attach() copies it in
  Buffer<float> average_;      // device memory without average_scratch(): the average's sum
  bool loaded_ = false;
};

}  // namespace gossamer::optim
