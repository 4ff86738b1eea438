// AdamW update rule on a slice of the flat parameters: one fused op call per run of views with
// the same weight-decay flag.
#include "core/buffer.h"
#include "core/error.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

std::vector<DecayRun> decay_runs(const model::ParamLayout& layout, size_t begin, size_t end) {
  std::vector<DecayRun> runs;
  for (const model::ParamView& view : layout.views()) {
    const size_t lo = std::max(begin, view.offset), hi = std::min(end, view.offset + view.numel);
    if (lo >= hi) continue;
    const bool decay = view.kind == model::ParamKind::PARAM_KIND_WEIGHT;
    if (!runs.empty() && runs.back().decay == decay && runs.back().end == lo - begin)
      runs.back().end = hi - begin;
    else
      runs.push_back({lo - begin, hi - begin, decay});
  }
  return runs;
}

namespace {

class AdamWRule final : public UpdateRule {
 public:
  AdamWRule(const OptimizerConfig& config, const model::ParamLayout& layout,
            const kernels::OpTable& ops, size_t begin, size_t end)
      : cfg_(config),
        ops_(ops),
        begin_(begin),
        total_(layout.total()),
        runs_(decay_runs(layout, begin, end)),
        m_(end - begin),
        v_(end - begin) {}

  const char* name() const override { return "adamw"; }

  void update(float* params, const float* grads, const StepContext& ctx) override {
    for (const DecayRun& r : runs_)
      ops_.adamw_update(params + r.begin, grads + r.begin, m_.data() + r.begin, v_.data() + r.begin,
                        r.end - r.begin,
                        {.lr = float(ctx.lr),
                         .beta1 = float(cfg_.beta1),
                         .beta2 = float(cfg_.beta2),
                         .eps = float(cfg_.eps),
                         .weight_decay = r.decay ? float(cfg_.weight_decay) : 0.0f,
                         .t = ctx.t});
  }

  std::vector<StateTensor> state() override {
    return {StateTensor::sharded("adamw.m", m_.data(), m_.size(), begin_, total_),
            StateTensor::sharded("adamw.v", v_.data(), v_.size(), begin_, total_)};
  }
  size_t state_bytes() const override { return (m_.size() + v_.size()) * sizeof(float); }

 private:
  OptimizerConfig cfg_;
  const kernels::OpTable& ops_;
  size_t begin_, total_;
  std::vector<DecayRun> runs_;
  HostBuffer<float> m_, v_;  // zero-initialised
};

}  // namespace

std::unique_ptr<UpdateRule> make_adamw_rule(const OptimizerConfig& config,
                                            const model::ParamLayout& layout,
                                            const kernels::OpTable& ops, size_t begin, size_t end) {
  GOSSAMER_CHECK(begin <= end && end <= layout.total(), "adamw: slice [%zu, %zu) outside %zu",
                 begin, end, layout.total());
  return std::make_unique<AdamWRule>(config, layout, ops, begin, end);
}

}  // namespace gossamer::optim
