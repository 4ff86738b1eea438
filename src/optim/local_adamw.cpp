// local_adamw (see local_adamw.h): local clipping and AdamW, per-rank state, averaged
// evaluation weights.
#include "optim/local_adamw.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "optim/sync_common.h"

namespace gossamer::optim {

std::unique_ptr<Optimizer> make_local_adamw(const OptimizerSetup& setup) {
  return std::make_unique<LocalAdamW>(setup);
}

LocalAdamW::LocalAdamW(const OptimizerSetup& setup)
    : ShardedOptimizer(setup, /*sharded=*/false),  // each rank updates all of its replica
      rule_(make_adamw_rule(cfg_, setup.layout, ops_, own_)) {}

StepResult LocalAdamW::step(const StepContext& ctx) {
  GOSSAMER_CHECK(attached(), "local_adamw: step before attach()");
  float* g = grads_.data();
  const double sumsq = ops_.sum_squares(g, total_);
  GOSSAMER_CHECK(std::isfinite(sumsq),
                 "step %lld: non-finite (NaN/Inf) gradients on rank %d; stopping without "
                 "updating (the last checkpoint is intact)",
                 (long long)ctx.t, comm_.rank());
  StepResult result;
  result.grad_norm = std::sqrt(sumsq);
  clip_to_norm(ops_, g, total_, result.grad_norm, cfg_.grad_clip);
  rule_->update(params_.data(), g, ctx);
  return result;
}

std::vector<StateTensor> LocalAdamW::state() {
  std::vector<StateTensor> s;
  for (StateTensor t : rule_->state()) {  // this rank's own moments
    t.scope = StateScope::STATE_SCOPE_PER_RANK;
    t.total = 0;
    t.layout = nullptr;
    s.push_back(std::move(t));
  }
  if (attached()) {
    s.push_back(StateTensor::per_rank("local.params", params_.data(), total_).in(*ops_.memory));
  } else {  // loading before attach: staged on the host until on_attach
    if (replica_.size() == 0) replica_ = HostBuffer<float>(total_);
    s.push_back(StateTensor::per_rank("local.params", replica_.data(), total_));
  }
  return s;
}

void LocalAdamW::on_attach() {
  // Allocated with the rest, not at the first evaluation late in a run.
  if (!ops_.memory->host_accessible && average_scratch() == nullptr)
    average_ = Buffer<float>(total_, *ops_.memory);
  if (!loaded_) return;  // a fresh run: every replica starts from the same weights
  ops_.memory->upload(params_.data(), replica_.data(), total_ * sizeof(float));
  replica_ = HostBuffer<float>();
}

bool LocalAdamW::evaluation_weights(std::span<float> out) {
  average_replicas(out);
  return true;
}

void LocalAdamW::average_replicas(std::span<float> out) {
  GOSSAMER_CHECK(out.size() == total_, "%s: evaluation buffer of %zu, layout %zu", name(),
                 out.size(), total_);
  // Summed where the buffers live: in `out` on host memory, in a scratch buffer on a device.
  const bool host = ops_.memory->host_accessible;
  float* sum = out.data();
  if (!host) sum = average_scratch() ? average_scratch() : average_.data();
  ops_.memory->copy(sum, params_.data(), total_ * sizeof(float));
  if (world_ > 1) {
    comm_.all_reduce(sum, total_, comm::DType::F32, comm::ReduceOp::SUM).wait();
    ops_.scale(sum, float(1.0 / world_), total_);
  }
  if (!host) ops_.memory->download(out.data(), sum, total_ * sizeof(float));
}

}  // namespace gossamer::optim
