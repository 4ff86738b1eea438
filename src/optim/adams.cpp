// AdamS update rule on a slice of the flat parameters (docs/SCAPE.md, "AdamS"): one state
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
            const kernels::OpTable& ops, size_t begin, size_t end)
      : cfg_(config),
        ops_(ops),
        begin_(begin),
        total_(layout.total()),
        code_form_(config.adams.form == AdamsForm::ADAMS_FORM_CODE),
        runs_(decay_runs(layout, begin, end)),
        m_(end - begin) {}

  const char* name() const override { return "adams"; }

  void update(float* params, const float* grads, const StepContext& ctx) override {
    for (const DecayRun& r : runs_)
      ops_.adams_update(params + r.begin, grads + r.begin, m_.data() + r.begin, r.end - r.begin,
                        {.lr = float(ctx.lr),
                         .beta1 = float(cfg_.beta1),
                         .beta2 = float(cfg_.beta2),
                         .eps = float(cfg_.eps),
                         .weight_decay = r.decay ? float(cfg_.weight_decay) : 0.0f,
                         .t = ctx.t,
                         .code_form = code_form_});
  }

  std::vector<StateTensor> state() override {
    return {StateTensor::sharded("adams.m", m_.data(), m_.size(), begin_, total_)};
  }
  size_t state_bytes() const override { return m_.size() * sizeof(float); }

 private:
  OptimizerConfig cfg_;
  const kernels::OpTable& ops_;
  size_t begin_, total_;
  bool code_form_;
  std::vector<DecayRun> runs_;
  HostBuffer<float> m_;  // zero-initialised
};

}  // namespace

std::unique_ptr<UpdateRule> make_adams_rule(const OptimizerConfig& config,
                                            const model::ParamLayout& layout,
                                            const kernels::OpTable& ops, size_t begin, size_t end) {
  GOSSAMER_CHECK(begin <= end && end <= layout.total(), "adams: slice [%zu, %zu) outside %zu",
                 begin, end, layout.total());
  return std::make_unique<AdamSRule>(config, layout, ops, begin, end);
}

}  // namespace gossamer::optim
