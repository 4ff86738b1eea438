// One training step of a model on one device through its op table alone: zero the gradients,
// forward and backward on a batch, the global gradient norm, clipping by it, then AdamW with
// decoupled weight decay on the PARAM_KIND_WEIGHT views only. This is what the trainer does at
// one rank with optimizer.name = adamw and zero_stage 0 (DataParallel with the AdamW rule; the
// same runs of views, the same clipping formula), without its configuration, buckets or
// communicator, for the
// GPU-only build, which has no trainer: the CUDA training test (tests/gpu) and the training
// benchmark (bench_cuda_train) use it. tests/unit/test_single_device_training.cpp checks it
// against the trainer's optimizer on the CPU, bit for bit. Header-only.
// Invariant: the moments are Buffers in the table's memory; nothing here reads device memory on
// the host (the loss comes back from forward(), the norm from sum_squares).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "kernels/ops.h"
#include "model/model.h"

namespace gossamer::bench {

struct AdamWSettings {
  double lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1, grad_clip = 1.0;
};

struct StepOutcome {
  float loss = 0;
  double grad_norm = 0;
};

class SingleDeviceAdamW {
 public:
  SingleDeviceAdamW(model::Model& model, const kernels::OpTable& ops, AdamWSettings settings)
      : model_(model),
        ops_(ops),
        s_(settings),
        m_(model.params().size(), *ops.memory),
        v_(model.params().size(), *ops.memory) {
    for (const model::ParamView& view : model.layout().views()) {
      const bool decay = view.kind == model::ParamKind::PARAM_KIND_WEIGHT;
      if (!runs_.empty() && runs_.back().decay == decay &&
          runs_.back().begin + runs_.back().n == view.offset)
        runs_.back().n += view.numel;
      else
        runs_.push_back({view.offset, view.numel, decay});
    }
  }

  // Update t (1-based) on one batch of B x T host tokens and targets.
  StepOutcome step(const int32_t* tokens, const int32_t* targets, int B, int T, int64_t t) {
    model_.zero_grad();
    const float loss = model_.forward(tokens, targets, B, T);
    model_.backward(1.0f);
    StepOutcome out = update(t);
    out.loss = loss;
    return out;
  }

  // The update part of step(): clipping and AdamW on the gradients backward left.
  StepOutcome update(int64_t t) {
    StepOutcome out;
    float* g = model_.grads().data();
    const size_t n = model_.grads().size();
    out.grad_norm = std::sqrt(ops_.sum_squares(g, n));
    if (s_.grad_clip > 0) {
      const double coef = s_.grad_clip / (out.grad_norm + 1e-6);
      if (coef < 1.0) ops_.scale(g, float(coef), n);
    }
    float* p = model_.params().data();
    for (const Run& r : runs_)
      ops_.adamw_update(p + r.begin, g + r.begin, m_.data() + r.begin, v_.data() + r.begin, r.n,
                        {.lr = float(s_.lr),
                         .beta1 = float(s_.beta1),
                         .beta2 = float(s_.beta2),
                         .eps = float(s_.eps),
                         .weight_decay = r.decay ? float(s_.weight_decay) : 0.0f,
                         .t = t});
    return out;
  }

 private:
  struct Run {
    size_t begin, n;
    bool decay;
  };
  model::Model& model_;
  const kernels::OpTable& ops_;
  AdamWSettings s_;
  Buffer<float> m_, v_;
  std::vector<Run> runs_;
};

}  // namespace gossamer::bench
