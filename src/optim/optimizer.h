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
#include <utility>
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
  // SCAPE (ALGORITHMS.md 2.2, reading A).
  double sparsity = 0.99;
  int64_t dense_warmup_steps = 0;
  int64_t dense_refresh_every = 0;
  std::string mask_score = "momentum";
  std::string mask_encoding = "auto";
  bool residual = true;
  std::string scape_reading = "A";
  int64_t catch_up_max = 1;

  template <class V>
  void visit(V& v) {
    v("name", name, "optimizer: \"adamw\", \"adams\" or \"scape\" (sparse AdamS)");
    v("lr", lr, "peak learning rate (after warm-up)");
    v("beta1", beta1, "first-moment decay");
    v("beta2", beta2,
      "second-moment decay (adams: weight of the previous momentum in the normaliser)");
    v("eps", eps, "denominator epsilon");
    v("weight_decay", weight_decay,
      "decoupled weight decay, applied to linear-layer matrices only (not to biases, norms or "
      "embeddings)");
    v("grad_clip", grad_clip, "clip the global gradient norm to this value (0: no clipping)");
    v("sparsity", sparsity,
      "scape: fraction of coordinates NOT communicated per step (0.9, 0.99; 0 = dense AdamS)");
    v("dense_warmup_steps", dense_warmup_steps,
      "scape: the first N steps are dense AdamS steps (the momentum that scores the mask is "
      "zero at the start)");
    v("dense_refresh_every", dense_refresh_every,
      "scape: every N-th step is dense, flushing all residuals (0: never)");
    v("mask_score", mask_score,
      "scape: \"momentum\" (top-k of |m|), \"momentum_residual\" (top-k of |beta1 m + (1 - "
      "beta1) ranks e_r|: the momentum after applying the pending residual) or \"gradient\" (top-k "
      "of the owner's residual-corrected local gradient, the baseline)");
    v("mask_encoding", mask_encoding,
      "scape: mask on the wire: \"auto\" (the smaller), \"indices\" or \"bitmap\"");
    v("residual", residual, "scape: keep the unsent gradient mass (error feedback; reading A)");
    v("scape_reading", scape_reading,
      "scape: \"A\" (the specified method: error-feedback residual of gradients, mask from the "
      "owner's momentum) or \"B\" (every rank keeps a dense local momentum and sends it at the "
      "mask, the mask is the owner's top-k of its local momentum; docs/SCAPE.md)");
    v("catch_up_max", catch_up_max,
      "scape reading B: a coordinate updated after a steps moves min(a, N) AdamS steps at once "
      "(1: one step per update)");
    v("adams_form", adams_form,
      "adams and scape: \"code\" (the official code's bias-corrected form) or \"paper\" (no bias "
      "correction)");
  }
  void validate(const std::string& path = "optimizer.") const;
};

// One named state tensor: this rank's slice [offset, offset + numel) of a flat tensor of
// `total` elements laid out like the parameters.
// additive_rows = R > 0: the tensor is one row of R elements per rank (total = world x R),
// whose rows only ever matter through their sum (e.g. error-feedback residuals). Loaded at
// the world size it was saved at, each rank gets its own row back; at another world size,
// rank 0 gets the sum of the saved rows and the other ranks zeros.
struct StateTensor {
  std::string name;
  float* data;
  size_t numel;
  size_t offset = 0;
  size_t total = 0;
  size_t additive_rows = 0;
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
  // Called after a checkpoint's values were written into the tensors of state().
  virtual void state_loaded() {}
  // Bytes of optimizer state held by this rank.
  virtual size_t state_bytes() const = 0;
  // Method-specific figures of the last step for metrics.jsonl ("optim" object).
  virtual std::vector<std::pair<std::string, double>> step_metrics() const { return {}; }
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
