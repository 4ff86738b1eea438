// AdamW over the flat parameter buffer: m and v are flat tensors of the parameter layout;
// weight decay applies to PARAM_KIND_WEIGHT views only (linear-layer matrices).
#pragma once

#include "core/buffer.h"
#include "optim/optimizer.h"

namespace gossamer::optim {

class AdamW final : public Optimizer {
 public:
  AdamW(const OptimizerConfig& config, const model::ParamLayout& layout,
        const kernels::OpTable& ops);
  const char* name() const override { return "adamw"; }
  void step(std::span<float> params, std::span<const float> grads, const StepContext& ctx) override;
  std::vector<StateTensor> state() override;
  size_t state_bytes() const override { return (m_.size() + v_.size()) * sizeof(float); }

 private:
  struct Range {
    size_t begin, end;
    bool decay;
  };
  OptimizerConfig cfg_;
  const kernels::OpTable& ops_;
  std::vector<Range> ranges_;  // maximal runs of views with the same decay flag
  HostBuffer<float> m_, v_;
};

}  // namespace gossamer::optim
