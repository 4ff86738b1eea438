// AdamS update rule on the owned pieces of the flat parameters (docs/SCAPE.md, "AdamS"): one state
// tensor m, half of AdamW's state; one fused op call per run of views with the same weight-decay
// flag.
#include "core/buffer.h"
#include "core/error.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

namespace {

class AdamSRule final : public UpdateRule {
 public:
  AdamSRule(const OptimizerConfig& config, const model::ParamLayout& layout,
            const kernels::OpTable& ops, const OwnedShard& own)
      : cfg_(config),
        ops_(ops),
        own_(own),
        code_form_(config.adams.form == AdamsForm::ADAMS_FORM_CODE),
        runs_(owned_runs(layout, own)),
        m_(own.size, *ops.memory) {}

  const char* name() const override { return "adams"; }

  void update(float* params, const float* grads, const StepContext& ctx) override {
    for (const OwnedRun& r : runs_)
      ops_.adams_update(params + r.begin, grads + r.begin, m_.data() + r.local, r.n,
                        {.lr = float(ctx.lr),
                         .beta1 = float(cfg_.beta1),
                         .beta2 = float(cfg_.beta2),
                         .eps = float(cfg_.eps),
                         .weight_decay = r.decay ? float(cfg_.weight_decay) : 0.0f,
                         .t = ctx.t,
                         .code_form = code_form_});
  }

  std::vector<StateTensor> state() override {
    return {StateTensor::sharded("adams.m", m_.data(), own_).in(m_.memory())};
  }
  size_t state_bytes() const override { return m_.size() * sizeof(float); }

 private:
  OptimizerConfig cfg_;
  const kernels::OpTable& ops_;
  OwnedShard own_;
  bool code_form_;
  std::vector<OwnedRun> runs_;
  Buffer<float> m_;  // zero-initialised, in the op table's memory
};

}  // namespace

std::unique_ptr<UpdateRule> make_adams_rule(const OptimizerConfig& config,
                                            const model::ParamLayout& layout,
                                            const kernels::OpTable& ops, const OwnedShard& own) {
  GOSSAMER_CHECK(own.total == layout.total(), "adams: shard of a space of %zu elements, layout %zu",
                 own.total, layout.total());
  return std::make_unique<AdamSRule>(config, layout, ops, own);
}

}  // namespace gossamer::optim
