// Optimizer interface and registry. An optimizer receives each rank's local, unsynchronised
// gradients and owns everything from there to updated parameters: what to communicate (dense
// all-reduce, reduce-scatter + all-gather, ...), gradient clipping by the global norm, and
// the update; it guarantees its own invariant about the parameters afterwards (for the
// data-parallel methods: replicas bit-identical on every rank). Its state is a set of named
// flat tensors in the parameter layout, each rank holding a contiguous slice of each, so
// checkpoints gather them into a world-size-independent file.
// The training loop knows no optimizer by name: it builds one through make_optimizer() and
// drives it through the micro-batch protocol below.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "kernels/ops.h"
#include "model/param_layout.h"
#include "optim/parallel_config.h"

namespace gossamer::optim {

struct OptimizerConfig {
  std::string name = "adamw";
  double lr = 6e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  std::string adams_form = "code";

  template <class V>
  void visit(V& v) {
    v("name", name, "optimizer: \"adamw\" or \"adams\"");
    v("lr", lr, "peak learning rate (after warm-up)");
    v("beta1", beta1, "first-moment decay");
    v("beta2", beta2,
      "second-moment decay (adams: weight of the previous momentum in the normaliser)");
    v("eps", eps, "denominator epsilon");
    v("weight_decay", weight_decay,
      "decoupled weight decay, applied to linear-layer matrices only (not to biases, norms or "
      "embeddings)");
    v("grad_clip", grad_clip, "clip the global gradient norm to this value (0: no clipping)");
    v("adams_form", adams_form,
      "adams only: \"code\" (the official code's bias-corrected form) or \"paper\" (no bias "
      "correction)");
  }
  void validate(const std::string& path = "optimizer.") const;
};

// One named state tensor: this rank's slice [offset, offset + numel) of a flat tensor of
// `total` elements laid out like the parameters.
struct StateTensor {
  std::string name;
  float* data;
  size_t numel;
  size_t offset = 0;
  size_t total = 0;
};

struct StepContext {
  int64_t t;  // 1-based index of this update
  double lr;  // learning rate for this update (schedule applied)
};

struct StepResult {
  double grad_norm = 0;  // global norm of the averaged gradient, before clipping
};

// Per step the trainer calls, for each micro-batch i of n:
//   micro_batch_begin(i, n, grads); model.backward(gradient_scale() / n, hook -> grads_ready);
//   micro_batch_end(i, n);
// then step(). grads_ready(begin, end) reports gradient ranges that are final for this
// micro-batch, as a growing prefix of the flat buffer (the model's backward order).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual const char* name() const = 0;

  // Factor the trainer applies to the loss gradient of every rank (1/world for averaging).
  virtual double gradient_scale() const { return 1.0; }
  virtual void micro_batch_begin(int index, int count, std::span<float> grads) {}
  virtual void grads_ready(size_t begin, size_t end) {}
  virtual void micro_batch_end(int index, int count) {}
  // Synchronises, clips and updates. Throws gossamer::Error on every rank (the same message)
  // when some rank's local gradients are not finite; the parameters are then unchanged.
  virtual StepResult step(std::span<float> params, std::span<float> grads,
                          const StepContext& ctx) = 0;

  virtual std::vector<StateTensor> state() = 0;
  // Bytes of optimizer state held by this rank.
  virtual size_t state_bytes() const = 0;
};

// Builds config.name synchronised over `comm` as `parallel` says (zero stage, communication
// dtype, buckets). Throws gossamer::Error naming the key when a setting is invalid. The
// communicator must outlive the optimizer.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config,
                                          const ParallelConfig& parallel,
                                          const model::ParamLayout& layout,
                                          const kernels::OpTable& ops, comm::Communicator& comm);

// One process, no communication (tests, benchmarks, tools).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config,
                                          const model::ParamLayout& layout,
                                          const kernels::OpTable& ops);

// Names accepted by make_optimizer, for help texts and errors.
std::vector<std::string> optimizer_names();

}  // namespace gossamer::optim
