// UpdateRule: the element-wise part of a dense optimizer (AdamW, AdamS, ...) applied to the
// pieces of the flat parameter space one rank owns (OwnedShard), with state for those pieces
// only, packed. The data-parallel wrapper (data_parallel.h) decides what a rank owns: all of it
// when replicated, its pieces of every bucket under ZeRO. Invariant: the result for a
// coordinate depends only on that coordinate's parameter, gradient and state, so any split
// gives identical numbers.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/ops.h"
#include "model/param_layout.h"
#include "optim/optimizer.h"
#include "optim/shard_layout.h"

namespace gossamer::optim {

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  virtual const char* name() const = 0;
  // params and grads are the whole flat buffers; only the owned pieces are read or written.
  virtual void update(float* params, const float* grads, const StepContext& ctx) = 0;
  virtual std::vector<StateTensor> state() = 0;
  virtual size_t state_bytes() const = 0;
};

// AdamW on the owned pieces: decoupled weight decay on PARAM_KIND_WEIGHT views only.
std::unique_ptr<UpdateRule> make_adamw_rule(const OptimizerConfig& config,
                                            const model::ParamLayout& layout,
                                            const kernels::OpTable& ops, const OwnedShard& own);

// AdamS on the owned pieces (config.adams.form: the official code's form, or the paper's
// without bias correction); decoupled weight decay on PARAM_KIND_WEIGHT views only.
std::unique_ptr<UpdateRule> make_adams_rule(const OptimizerConfig& config,
                                            const model::ParamLayout& layout,
                                            const kernels::OpTable& ops, const OwnedShard& own);

// A stretch of owned elements with one weight-decay flag: flat [begin, begin + n), at local
// offset `local` of the owner's packed buffers.
struct OwnedRun {
  size_t begin, local, n;
  bool decay;
};
// The maximal runs of views with equal weight-decay flags within each owned piece, in order.
std::vector<OwnedRun> owned_runs(const model::ParamLayout& layout, const OwnedShard& own);

}  // namespace gossamer::optim
