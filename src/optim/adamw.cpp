// AdamW update rule on the owned pieces of the flat parameters: one fused op call per run of views
// with the same weight-decay flag.
#include "core/buffer.h"
#include "core/error.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

namespace {

class AdamWRule final : public UpdateRule {
 public:
  AdamWRule(const OptimizerConfig& config, const model::ParamLayout& layout,
            const kernels::OpTable& ops, const OwnedShard& own)
      : cfg_(config),
        ops_(ops),
        own_(own),
        runs_(owned_runs(layout, own)),
        m_(own.size, *ops.memory),
        v_(own.size, *ops.memory) {}

  const char* name() const override { return "adamw"; }

  void update(float* params, const float* grads, const StepContext& ctx) override {
    for (const OwnedRun& r : runs_)
      ops_.adamw_update(params + r.begin, grads + r.begin, m_.data() + r.local, v_.data() + r.local,
                        r.n,
                        {.lr = float(ctx.lr),
                         .beta1 = float(cfg_.beta1),
                         .beta2 = float(cfg_.beta2),
                         .eps = float(cfg_.eps),
                         .weight_decay = r.decay ? float(cfg_.weight_decay) : 0.0f,
                         .t = ctx.t});
  }

  std::vector<StateTensor> state() override {
    return {StateTensor::sharded("adamw.m", m_.data(), own_).in(m_.memory()),
            StateTensor::sharded("adamw.v", v_.data(), own_).in(v_.memory())};
  }
  size_t state_bytes() const override { return (m_.size() + v_.size()) * sizeof(float); }

 private:
  OptimizerConfig cfg_;
  const kernels::OpTable& ops_;
  OwnedShard own_;
  std::vector<OwnedRun> runs_;
  Buffer<float> m_, v_;  // zero-initialised, in the op table's memory
};

}  // namespace

std::unique_ptr<UpdateRule> make_adamw_rule(const OptimizerConfig& config,
                                            const model::ParamLayout& layout,
                                            const kernels::OpTable& ops, const OwnedShard& own) {
  GOSSAMER_CHECK(own.total == layout.total(), "adamw: shard of a space of %zu elements, layout %zu",
                 own.total, layout.total());
  return std::make_unique<AdamWRule>(config, layout, ops, own);
}

}  // namespace gossamer::optim
