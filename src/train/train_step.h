// One optimizer step of data-parallel training, shared by the training loop and `gossamer
// bench`: zero the gradients, run each micro-batch's forward and backward (the optimizer's
// micro-batch protocol, its gradient hook driving communication), then the optimizer's step.
// Invariant: the batch source is called exactly `accum` times, in micro-batch order.
#pragma once

#include <cstdint>
#include <functional>

#include "model/model.h"
#include "optim/optimizer.h"

namespace gossamer::train {

struct StepTimings {
  double local_loss = 0;  // this rank's mean loss over its micro-batches
  optim::StepResult result;
  double fwd_s = 0, bwd_s = 0, optim_s = 0;
};

struct StepHooks {
  float grad_scale_factor = 1.0f;     // multiplies the loss gradient (fault injection: NaN)
  std::function<void()> before_step;  // after the last backward, before optimizer.step()
};

// Attaches the optimizer to the model's buffers, routing the block matrices' gradients first
// when the method keeps them compact (Optimizer::routes_block_weight_gradients()).
void attach_optimizer(model::Model& model, optim::Optimizer& optimizer);

// fill_batch(inputs, targets) supplies one micro-batch of B x T tokens. The optimizer is
// attached to the model's buffers.
StepTimings train_step(model::Model& model, optim::Optimizer& optimizer, int64_t accum, int B,
                       int T, int32_t* inputs, int32_t* targets,
                       const std::function<void(int32_t*, int32_t*)>& fill_batch,
                       const optim::StepContext& ctx, const StepHooks& hooks = {});

// A step in which this rank's method gives it no work (Optimizer::computes_step false): the
// batches are drawn and dropped, so every rank's data position stays where a computing rank's
// would be, and the optimizer's step() runs (it may end a round) without a forward or backward.
StepTimings idle_step(optim::Optimizer& optimizer, int64_t accum, int32_t* inputs, int32_t* targets,
                      const std::function<void(int32_t*, int32_t*)>& fill_batch,
                      const optim::StepContext& ctx);

}  // namespace gossamer::train
