// UpdateRule: the element-wise part of a dense optimizer (AdamW, AdamS, ...) applied to one
// contiguous slice [begin, end) of the flat parameter space, with state for that slice only.
// The data-parallel wrapper (data_parallel.h) decides which slice a rank updates: all of it
// when replicated, its shard under ZeRO. Invariant: the result for a coordinate depends only on
// that coordinate's parameter, gradient and state, so any slicing gives identical numbers.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/ops.h"
#include "model/param_layout.h"
#include "optim/optimizer.h"

namespace gossamer::optim {

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  virtual const char* name() const = 0;
  // params and grads point at flat element `begin` of the rule's slice (end - begin elements).
  virtual void update(float* params, const float* grads, const StepContext& ctx) = 0;
  virtual std::vector<StateTensor> state() = 0;
  virtual size_t state_bytes() const = 0;
};

// AdamW on [begin, end): decoupled weight decay on PARAM_KIND_WEIGHT views only.
std::unique_ptr<UpdateRule> make_adamw_rule(const OptimizerConfig& config,
                                            const model::ParamLayout& layout,
                                            const kernels::OpTable& ops, size_t begin, size_t end);

// AdamS on [begin, end) (config.adams.form: the official code's form, or the paper's without
// bias correction); decoupled weight decay on PARAM_KIND_WEIGHT views only.
std::unique_ptr<UpdateRule> make_adams_rule(const OptimizerConfig& config,
                                            const model::ParamLayout& layout,
                                            const kernels::OpTable& ops, size_t begin, size_t end);

// The maximal runs of views with equal weight-decay flags, clipped to [begin, end), as offsets
// relative to `begin`.
struct DecayRun {
  size_t begin, end;
  bool decay;
};
std::vector<DecayRun> decay_runs(const model::ParamLayout& layout, size_t begin, size_t end);

}  // namespace gossamer::optim
