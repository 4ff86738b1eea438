// Optimizer: the seam between the training loop and a method. An optimizer receives each
// rank's local, unsynchronised gradients and owns everything from there to updated parameters:
// what to communicate, clipping by the global norm, and the update. Its life:
//   1. built by the registry from an OptimizerSetup (optim/registry.h), which carries the
//      run's seed and total number of steps;
//   2. its state() tensors filled from a checkpoint, then state_loaded() (on --resume only);
//   3. attach(params, grads): once, after the weights are final (initialisation, --init-from,
//      --resume); the method keeps the two spans and may impose an invariant on the weights
//      before the first forward;
//   4. per step, for each micro-batch i of n: micro_batch_begin(i, n); the model's backward
//      reports final gradient ranges through grads_ready(begin, end) (a growing prefix of the
//      flat buffer); micro_batch_end(i, n); then step().
// Each optimizer declares a replica contract (what it guarantees about the ranks' parameters),
// which the trainer uses for per-step telemetry, replica checks, evaluation and checkpoints.
// The training loop knows no optimizer by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "kernels/ops.h"
#include "model/param_layout.h"
#include "optim/optimizer_config.h"
#include "optim/parallel_config.h"
#include "optim/state_tensor.h"

namespace gossamer::optim {

// What an optimizer guarantees about the parameters of the ranks.
enum class Replicas {
  // Bit-identical on every rank after every step (data parallel, SCAPE).
  REPLICAS_IDENTICAL_EVERY_STEP,
  // Identical at the end of each round of local steps, different within it (DiLoCo).
  REPLICAS_IDENTICAL_AT_ROUND_END,
  // Never required to be identical; ranks must not wait for each other every step (gossip).
  REPLICAS_INDEPENDENT,
};
const char* replicas_name(Replicas replicas);

// Everything a factory receives. `comm` moves the optimizer's buffers (gradients,
// parameters); `control` carries small host values (flags, norms): the same communicator on the
// CPU, a host communicator beside a device one on GPUs. Both must outlive the optimizer.
struct OptimizerSetup {
  const OptimizerConfig& config;
  const ParallelConfig& parallel;
  const model::ParamLayout& layout;
  const kernels::OpTable& ops;
  comm::Communicator& comm;
  comm::Communicator& control;
  uint64_t seed = 0;        // the run's seed (train.seed)
  int64_t total_steps = 0;  // train.steps: the step count schedules run to
};

struct StepContext {
  int64_t t;  // 1-based index of this update
  double lr;  // learning rate for this update (schedule applied)
};

struct StepResult {
  double grad_norm = 0;  // global norm of the averaged gradient, before clipping
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual const char* name() const = 0;
  virtual Replicas replicas() const = 0;
  // Whether the replicas are identical right after the last step: always for
  // REPLICAS_IDENTICAL_EVERY_STEP, at round ends for REPLICAS_IDENTICAL_AT_ROUND_END (such
  // methods override this), never for REPLICAS_INDEPENDENT. The replica check runs only then.
  virtual bool replicas_identical_now() const {
    return replicas() == Replicas::REPLICAS_IDENTICAL_EVERY_STEP;
  }

  // Whether the method keeps the gradients of the block matrices only in its own compact form,
  // so the model must not keep them whole (Model::route_block_weight_gradients(), whose hook
  // calls routed_gradient_ready() with each matrix's gradient during backward).
  virtual bool routes_block_weight_gradients() const { return false; }
  virtual void routed_gradient_ready(size_t view, const float* grad) {}

  // Whether the method runs with its op table's buffers on device memory (kernels.device =
  // cuda): state in that memory, every loop over parameters, gradients or state through ops.
  // Methods that still loop on the host say no, and the trainer refuses them there.
  virtual bool supports_device_memory() const { return false; }

  // Hands over the model's flat parameter and gradient buffers (layout-sized; both outlive
  // the optimizer). Called once, before the first micro-batch. Methods that impose an
  // invariant on the weights override on_attach().
  void attach(std::span<float> params, std::span<float> grads);
  bool attached() const { return !params_.empty(); }

  // Whether this rank computes a gradient at update t (1-based). A method with rounds of
  // per-rank local steps lets a rank idle in the slots beyond its own steps: the trainer then
  // draws and drops its batches (so data positions stay aligned) and calls step() without a
  // forward or backward; step() must not read the gradients then.
  virtual bool computes_step(int64_t t) const { return true; }

  // Factor the trainer applies to the loss gradient of every rank (1/world for averaging).
  virtual double gradient_scale() const { return 1.0; }
  virtual void micro_batch_begin(int index, int count) {}
  virtual void grads_ready(size_t begin, size_t end) {}
  virtual void micro_batch_end(int index, int count) {}
  // Synchronises, clips and updates the attached parameters. Throws CollectiveError on every
  // rank (the same message) when some rank's local gradients are not finite; the parameters
  // are then unchanged.
  virtual StepResult step(const StepContext& ctx) = 0;

  virtual std::vector<StateTensor> state() = 0;
  // Called after a checkpoint's values were written into the tensors of state().
  virtual void state_loaded() {}
  // Bytes of optimizer state held by this rank.
  virtual size_t state_bytes() const = 0;
  // Method-specific figures of the last step for metrics.jsonl ("optim" object).
  virtual std::vector<std::pair<std::string, double>> step_metrics() const { return {}; }

  // The weights evaluation and the checkpoint's model.safetensors see. Methods whose replicas
  // are identical return false: the model's own parameters are meant. Others write the weights
  // to evaluate (an anchor, or the average of the replicas) into `out` (layout-sized) and
  // return true; this may be collective, so every rank calls it at the same steps.
  virtual bool evaluation_weights(std::span<float> out) { return false; }

 protected:
  virtual void on_attach() {}
  std::span<float> params_, grads_;
};

}  // namespace gossamer::optim
