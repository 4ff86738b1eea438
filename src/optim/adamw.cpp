// AdamW: runs of the layout with equal weight-decay flags are updated by one op call each.
#include "optim/adamw.h"

#include "core/error.h"

namespace gossamer::optim {

AdamW::AdamW(const OptimizerConfig& config, const model::ParamLayout& layout,
             const kernels::OpTable& ops)
    : cfg_(config), ops_(ops), m_(layout.total()), v_(layout.total()) {
  for (const model::ParamView& view : layout.views()) {
    const bool decay = view.kind == model::ParamKind::PARAM_KIND_WEIGHT;
    if (!ranges_.empty() && ranges_.back().decay == decay && ranges_.back().end == view.offset)
      ranges_.back().end = view.offset + view.numel;
    else
      ranges_.push_back({view.offset, view.offset + view.numel, decay});
  }
}

void AdamW::step(std::span<float> params, std::span<const float> grads, const StepContext& ctx) {
  GOSSAMER_CHECK(params.size() == m_.size() && grads.size() == m_.size(),
                 "adamw: buffer sizes differ from the layout");
  for (const Range& r : ranges_) {
    ops_.adamw_update(params.data() + r.begin, grads.data() + r.begin, m_.data() + r.begin,
                      v_.data() + r.begin, r.end - r.begin, static_cast<float>(ctx.lr),
                      static_cast<float>(cfg_.beta1), static_cast<float>(cfg_.beta2),
                      static_cast<float>(cfg_.eps),
                      r.decay ? static_cast<float>(cfg_.weight_decay) : 0.0f, ctx.t);
  }
}

std::vector<StateTensor> AdamW::state() {
  return {{"adamw.m", m_.data(), m_.size()}, {"adamw.v", v_.data(), v_.size()}};
}

}  // namespace gossamer::optim
