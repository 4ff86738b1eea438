// attach_optimizer() and train_step(): micro-batches through forward/backward with the optimizer's
// protocol, then step.
#include "train/train_step.h"

#include "core/timer.h"

namespace gossamer::train {

void attach_optimizer(model::Model& model, optim::Optimizer& optimizer) {
  if (optimizer.routes_block_weight_gradients())
    model.route_block_weight_gradients([&optimizer](size_t view, const float* grad) {
      optimizer.routed_gradient_ready(view, grad);
    });
  optimizer.attach(model.params(), model.grads());
}

StepTimings train_step(model::Model& model, optim::Optimizer& optimizer, int64_t accum, int B,
                       int T, int32_t* inputs, int32_t* targets,
                       const std::function<void(int32_t*, int32_t*)>& fill_batch,
                       const optim::StepContext& ctx, const StepHooks& hooks) {
  StepTimings s;
  model.zero_grad();
  const float grad_scale =
      float(optimizer.gradient_scale() / double(accum)) * hooks.grad_scale_factor;
  const auto hook = [&](size_t begin, size_t end) { optimizer.grads_ready(begin, end); };
  for (int64_t micro = 0; micro < accum; ++micro) {
    fill_batch(inputs, targets);
    Stopwatch w;
    s.local_loss += model.forward(inputs, targets, B, T) / double(accum);
    // The LM head's gradient products run inside the forward: counted as backward.
    const double inside = model.forward_backward_seconds();
    s.fwd_s += w.seconds() - inside;
    s.bwd_s += inside;
    w.reset();
    optimizer.micro_batch_begin(int(micro), int(accum));
    model.backward(grad_scale, hook);
    optimizer.micro_batch_end(int(micro), int(accum));
    s.bwd_s += w.seconds();
  }
  if (hooks.before_step) hooks.before_step();
  Stopwatch w;
  s.result = optimizer.step(ctx);
  s.optim_s = w.seconds();
  return s;
}

StepTimings idle_step(optim::Optimizer& optimizer, int64_t accum, int32_t* inputs, int32_t* targets,
                      const std::function<void(int32_t*, int32_t*)>& fill_batch,
                      const optim::StepContext& ctx) {
  StepTimings s;
  for (int64_t micro = 0; micro < accum; ++micro) fill_batch(inputs, targets);
  Stopwatch w;
  s.result = optimizer.step(ctx);
  s.optim_s = w.seconds();
  return s;
}

}  // namespace gossamer::train
