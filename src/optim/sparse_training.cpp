// Dynamic sparse training (see sparse_training.h): compaction of routed gradients, the
// replicated all-reduce of compact and dense gradients, clipping, the block-wise AdamW update
// with SMET's fixes, topology updates, state and telemetry.
#include "optim/sparse_training.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "comm/byte_accounting.h"
#include "core/error.h"
#include "core/log.h"
#include "optim/sync_common.h"

namespace gossamer::optim {

using comm::DType;
using comm::ReduceOp;

namespace {

kernels::WarmupRamp ramp_of(RegrowWarmup w) {
  switch (w) {
    case RegrowWarmup::REGROW_WARMUP_MOMENTUM_INPLACE:
      return kernels::WarmupRamp::MOMENTUM_INPLACE;
    case RegrowWarmup::REGROW_WARMUP_LR_RAMP:
      return kernels::WarmupRamp::LR_RAMP;
    case RegrowWarmup::REGROW_WARMUP_NONE:
      return kernels::WarmupRamp::NONE;
  }
  return kernels::WarmupRamp::NONE;
}

void check_replicated(const OptimizerSetup& setup, const char* name) {
  GOSSAMER_CHECK(setup.parallel.zero_stage == 0,
                 "parallel.zero_stage: optimizer \"%s\" keeps its compact state replicated and "
                 "needs zero_stage 0 (found %d; ZeRO-1/2 are not built for it)",
                 name, setup.parallel.zero_stage);
  GOSSAMER_CHECK(setup.parallel.comm_dtype == CommDtype::COMM_DTYPE_FP32,
                 "parallel.comm_dtype: optimizer \"%s\" sends fp32 gradients only", name);
}

}  // namespace

void DstConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(density > 0 && density <= 1, "%sdensity: must lie in (0, 1], found %g", p.c_str(),
                 density);
  GOSSAMER_CHECK(block_size == 1 || block_size == 16 || block_size == 32 || block_size == 128,
                 "%sblock_size: must be 1, 16, 32 or 128, found %lld", p.c_str(),
                 (long long)block_size);
  GOSSAMER_CHECK(update_interval >= 0, "%supdate_interval: must be >= 0, found %lld", p.c_str(),
                 (long long)update_interval);
  GOSSAMER_CHECK(prune_fraction >= 0 && prune_fraction < 1,
                 "%sprune_fraction: must lie in [0, 1), found %g", p.c_str(), prune_fraction);
  GOSSAMER_CHECK(prune_fraction_end >= 0 && prune_fraction_end <= prune_fraction,
                 "%sprune_fraction_end: must lie in [0, prune_fraction=%g], found %g", p.c_str(),
                 prune_fraction, prune_fraction_end);
}

void SmetConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(regrow_warmup_steps >= 0, "%sregrow_warmup_steps: must be >= 0, found %lld",
                 p.c_str(), (long long)regrow_warmup_steps);
  GOSSAMER_CHECK(density_lr_power >= 0 && density_lr_power <= 2,
                 "%sdensity_lr_power: must lie in [0, 2], found %g", p.c_str(), density_lr_power);
}

std::unique_ptr<Optimizer> make_smet(const OptimizerSetup& setup) {
  check_replicated(setup, "smet");
  const SmetConfig& s = setup.config.smet;
  return std::make_unique<SparseTraining>(
      setup, "smet",
      SparseTraining::Fixes{s.step_reset, ramp_of(s.warmup), s.regrow_warmup_steps,
                            s.ramp_from_start, s.density_lr_power});
}

std::unique_ptr<Optimizer> make_dst(const OptimizerSetup& setup) {
  check_replicated(setup, "dst");
  return std::make_unique<SparseTraining>(
      setup, "dst", SparseTraining::Fixes{false, kernels::WarmupRamp::NONE, 0, true, 0.0});
}

SparseTraining::SparseTraining(const OptimizerSetup& setup, const char* name, const Fixes& fixes)
    : ShardedOptimizer(setup, /*sharded=*/false),
      name_(name),
      fixes_(fixes),
      dst_(setup.config.dst),
      seed_(setup.seed),
      total_steps_(setup.total_steps),
      mask_(setup.layout, dst_.density, size_t(dst_.block_size), setup.seed),
      layout_(setup.layout) {
  const auto& views = setup.layout.views();
  sparse_of_view_.assign(views.size(), -1);
  for (size_t k = 0; k < mask_.views().size(); ++k) sparse_of_view_[mask_.views()[k].view] = int(k);
  for (size_t i = 0; i < views.size(); ++i) {  // maximal runs of dense views by decay flag
    if (sparse_of_view_[i] >= 0) continue;
    const bool decay = views[i].kind == model::ParamKind::PARAM_KIND_WEIGHT;
    if (!dense_runs_.empty() && dense_runs_.back().decay == decay &&
        dense_runs_.back().begin + dense_runs_.back().n == views[i].offset && i > 0 &&
        sparse_of_view_[i - 1] < 0) {
      dense_runs_.back().n += views[i].numel;
    } else {
      dense_runs_.push_back({views[i].offset, views[i].numel, dense_total_, decay});
    }
    dense_total_ += views[i].numel;
  }
  const size_t slots = mask_.slots(), B = mask_.block_size();
  const MemoryOps& mem = *ops_.memory;
  grad_c_ = Buffer<float>(slots * B, mem);
  m_c_ = Buffer<float>(slots * B, mem);
  v_c_ = Buffer<float>(slots * B, mem);
  update_sq_ = Buffer<float>(slots, mem);
  steps_ = Buffer<int32_t>(slots, mem);
  blocks_dev_ = Buffer<int32_t>(slots, mem);
  blocks_dev_.upload(mask_.blocks().data(), slots);
  dense_m_ = Buffer<float>(dense_total_, mem);
  dense_v_ = Buffer<float>(dense_total_, mem);
  dense_block_ = Buffer<int32_t>(1, mem);  // zero-filled
  dense_step_ = Buffer<int32_t>(1, mem);
  l1_ = Buffer<double>(slots, mem);
  size_t list = slots;  // a view's blocks, or every slot
  for (const SparseView& v : mask_.views()) list = std::max(list, v.blocks);
  list_dev_ = Buffer<int32_t>(list, mem);
  fresh_slots_dev_ = Buffer<uint32_t>(slots, mem);
  old_slots_dev_ = Buffer<uint32_t>(slots, mem);
  sq_scratch_ = Buffer<float>(slots, mem);
  launched_sq_ = LaunchedSums(views.size(), mem);  // at most one launch per view
  fresh_ = HostBuffer<uint8_t>(slots);
  active_numel_ = mask_.active_numel();  // fixed: a view's slots keep their count
  count_fresh();
}

SparseTraining::~SparseTraining() {
  for (comm::Work& w : pending_) {
    try {
      w.wait();
    } catch (...) {
    }
  }
}

double SparseTraining::prune_fraction(int64_t t) const {
  if (total_steps_ <= 0) return dst_.prune_fraction;
  const double x = std::min(1.0, double(t) / double(total_steps_));
  return dst_.prune_fraction_end +
         (dst_.prune_fraction - dst_.prune_fraction_end) * 0.5 * (1.0 + std::cos(M_PI * x));
}

double SparseTraining::sparse_bytes_per_weight() const {
  const size_t slots = mask_.slots(), B = mask_.block_size();
  const size_t bytes = 3 * slots * B * sizeof(float) + slots * (2 * sizeof(int32_t) + 1);
  return double(bytes) / double(mask_.sparse_numel());
}

size_t SparseTraining::state_bytes() const {
  const size_t slots = mask_.slots(), B = mask_.block_size();
  return 2 * slots * B * sizeof(float) + slots * (2 * sizeof(int32_t) + 1) +
         2 * dense_total_ * sizeof(float);
}

void SparseTraining::zero_blocks_of(size_t k, const std::vector<int32_t>& blocks) {
  const SparseView& v = mask_.views()[k];
  list_dev_.upload(blocks.data(), blocks.size());
  ops_.zero_blocks(params_.data() + v.offset, list_dev_.data(), blocks.size(), mask_.block_size(),
                   v.numel);
}

void SparseTraining::on_attach() {
  // The inactive weights are zero from the first forward on, after init or a checkpoint.
  for (size_t k = 0; k < mask_.views().size(); ++k) zero_blocks_of(k, mask_.inactive_blocks(k));
  if (rank_ == 0)
    log_info(
        "%s: %zu matrices sparse at density %g in blocks of %zu (%zu of %zu weights active), %zu "
        "dense weights; gradients and state of the sparse matrices: %.2f bytes per weight "
        "(dense AdamW: 12)",
        name_, mask_.views().size(), dst_.density, mask_.block_size(), mask_.active_numel(),
        mask_.sparse_numel(), dense_total_, sparse_bytes_per_weight());
}

void SparseTraining::micro_batch_begin(int index, int count) {
  GOSSAMER_CHECK(attached(), "%s: micro-batch before attach()", name_);
  GOSSAMER_CHECK(pending_.empty() && next_view_ == 0,
                 "%s: micro-batch %d of %d started while the previous one is still communicating",
                 name_, index, count);
  communicating_ = index == count - 1;
  ready_ = 0;
  routed_seen_ = 0;
}

void SparseTraining::routed_gradient_ready(size_t view, const float* grad) {
  GOSSAMER_CHECK(view < sparse_of_view_.size() && sparse_of_view_[view] >= 0,
                 "%s: a routed gradient for view %zu, which is not sparse", name_, view);
  const SparseView& v = mask_.views()[sparse_of_view_[view]];
  ++routed_seen_;
  const size_t B = mask_.block_size();
  ops_.accumulate_blocks(grad_c_.data() + v.slot0 * B, grad, blocks_dev_.data() + v.slot0, v.active,
                         B, v.numel);
}

void SparseTraining::grads_ready(size_t begin, size_t end) {
  ready_ = std::max(ready_, end);
  if (communicating_) launch_ready();
}

void SparseTraining::launch_ready() {
  const auto& views = layout_.views();
  const size_t B = mask_.block_size();
  while (next_view_ < views.size() &&
         views[next_view_].offset + views[next_view_].numel <= ready_) {
    float* buf;
    size_t n;
    const int k = sparse_of_view_[next_view_];
    if (k >= 0) {  // one sparse view: its compact slots
      const SparseView& v = mask_.views()[k];
      buf = grad_c_.data() + v.slot0 * B, n = v.active * B;
      ++next_view_;
    } else {  // the dense views up to the next sparse one or the end of what is ready
      const size_t first = next_view_;
      while (next_view_ < views.size() && sparse_of_view_[next_view_] < 0 &&
             views[next_view_].offset + views[next_view_].numel <= ready_)
        ++next_view_;
      buf = grads_.data() + views[first].offset;
      n = views[next_view_ - 1].offset + views[next_view_ - 1].numel - views[first].offset;
    }
    // Its local sum of squares, before the reduction, left in the table's memory (no wait on a
    // GPU); read once per step (tally_checked()).
    ops_.sum_squares_to(launched_sq_.slot(launched_++), buf, n);
    if (world_ == 1) continue;
    pending_.push_back(comm_.all_reduce(buf, n, DType::F32, ReduceOp::SUM));
    grad_bytes_ += comm::all_reduce_bytes(n, DType::F32, world_).sent;
  }
}

void SparseTraining::micro_batch_end(int index, int count) {
  GOSSAMER_CHECK(routed_seen_ == mask_.views().size(),
                 "%s: micro-batch %d of %d handed over %zu of the %zu sparse matrices' gradients "
                 "(is the model routing them? train::attach_optimizer does)",
                 name_, index, count, routed_seen_, mask_.views().size());
  if (!communicating_) return;
  GOSSAMER_CHECK(ready_ == total_, "%s: backward reported gradients up to %zu of %zu", name_,
                 ready_, total_);
}

void SparseTraining::tally_checked() {
  launched_sq_.tally(launched_, &local_sumsq_, &local_bad_);
  launched_ = 0;
}

void SparseTraining::finish_all() {
  for (comm::Work& w : pending_) w.wait();
  pending_.clear();
}

StepResult SparseTraining::step(const StepContext& ctx) {
  GOSSAMER_CHECK(attached(), "%s: step before attach()", name_);
  ready_ = total_;
  launch_ready();  // everything, when the caller skipped the micro-batch protocol
  tally_checked();
  finish_all();
  next_view_ = 0;
  agree_gradients_finite(control_, !local_bad_, ctx.t);
  local_bad_ = false;
  // The norm of the averaged gradient: the sums of what was sent, again after the reduction.
  double sumsq = local_sumsq_;
  local_sumsq_ = 0;
  if (world_ > 1) {
    sumsq = ops_.sum_squares(grad_c_.data(), grad_c_.size());
    for (const DenseRun& r : dense_runs_) sumsq += ops_.sum_squares(grads_.data() + r.begin, r.n);
  }
  StepResult result;
  result.grad_norm = std::sqrt(sumsq);
  clip_to_norm(ops_, grad_c_.data(), grad_c_.size(), result.grad_norm, cfg_.grad_clip);
  for (const DenseRun& r : dense_runs_)
    clip_to_norm(ops_, grads_.data() + r.begin, r.n, result.grad_norm, cfg_.grad_clip);
  metrics_.clear();
  metrics_.emplace_back("grad_bytes", double(grad_bytes_));
  // The active fraction of the sparse matrices' weights (measured: blocks at the edges of a
  // matrix are smaller, so it can differ from the configured density).
  metrics_.emplace_back("density", double(active_numel_) / double(mask_.sparse_numel()));
  grad_bytes_ = 0;
  update(ctx);
  grad_c_.zero();  // for the next step
  if (dst_.update_interval > 0 && ctx.t % dst_.update_interval == 0) topology_update(ctx.t);
  communicating_ = false;
  ready_ = 0;
  return result;
}

void SparseTraining::update(const StepContext& ctx) {
  kernels::AdamStep hp{.lr = float(ctx.lr),
                       .beta1 = float(cfg_.beta1),
                       .beta2 = float(cfg_.beta2),
                       .eps = float(cfg_.eps),
                       .weight_decay = 0.0f,
                       .t = ctx.t,
                       .ramp = fixes_.ramp,
                       .warmup_steps = int(std::min<int64_t>(fixes_.warmup_steps, INT32_MAX)),
                       .ramp_restarted_only = !fixes_.ramp_from_start};
  // Dense weights: one block per run, the shared step count.
  // Set on the device: one step on from the last is an increment (no host copy, which would wait
  // for the stream on a GPU); any other value (the first step, a resume) an upload.
  const int32_t t = int32_t(std::min<int64_t>(ctx.t, INT32_MAX));
  if (dense_step_value_ >= 0 && t == dense_step_value_ + 1)
    ops_.increment_clamped(dense_step_.data(), 1, INT32_MAX);
  else
    dense_step_.upload(&t, 1);
  dense_step_value_ = t;
  for (const DenseRun& r : dense_runs_) {
    hp.weight_decay = r.decay ? float(cfg_.weight_decay) : 0.0f;
    ops_.adamw_update_blocks(params_.data() + r.begin, grads_.data() + r.begin,
                             dense_m_.data() + r.local, dense_v_.data() + r.local,
                             dense_block_.data(), dense_step_.data(), 1, r.n, r.n, nullptr, hp);
  }
  // Sparse matrices: the active blocks, each with its own step count.
  const size_t B = mask_.block_size();
  int32_t* steps = steps_.data();
  ops_.increment_clamped(steps, mask_.slots(), INT32_MAX - 1);
  hp.lr = float(ctx.lr * std::pow(dst_.density, -fixes_.density_lr_power));
  hp.weight_decay = float(cfg_.weight_decay);
  for (const SparseView& v : mask_.views())
    ops_.adamw_update_blocks(params_.data() + v.offset, grad_c_.data() + v.slot0 * B,
                             m_c_.data() + v.slot0 * B, v_c_.data() + v.slot0 * B,
                             blocks_dev_.data() + v.slot0, steps + v.slot0, v.active, B, v.numel,
                             update_sq_.data() + v.slot0, hp);
  // Telemetry: the per-weight update size of the blocks regrown at the last topology update
  // against the others (naive DST's cold start shows as a ratio of several).
  // The element counts and slot lists change only at a topology update (count_fresh()).
  if (fresh_numel_ == 0) return;
  const auto sum_at = [&](const Buffer<uint32_t>& slots, size_t n) {
    ops_.gather(sq_scratch_.data(), update_sq_.data(), slots.data(), n);
    return ops_.sum(sq_scratch_.data(), n);
  };
  const double sq_fresh = sum_at(fresh_slots_dev_, fresh_slots_.size());
  const double sq_old = sum_at(old_slots_dev_, old_slots_.size());
  const double n_old = double(active_numel_ - fresh_numel_);
  if (fresh_numel_ > 0 && sq_old > 0)
    metrics_.emplace_back("regrown_update_ratio",
                          std::sqrt(sq_fresh / double(fresh_numel_)) / std::sqrt(sq_old / n_old));
}

void SparseTraining::count_fresh() {
  fresh_numel_ = 0;
  fresh_slots_.clear();
  old_slots_.clear();
  for (const SparseView& v : mask_.views())
    for (size_t s = v.slot0; s < v.slot0 + v.active; ++s) {
      if (fresh_[s]) fresh_numel_ += mask_.slot_elements(v, s);
      (fresh_[s] ? fresh_slots_ : old_slots_).push_back(uint32_t(s));
    }
  fresh_slots_dev_.upload(fresh_slots_.data(), fresh_slots_.size());
  old_slots_dev_.upload(old_slots_.data(), old_slots_.size());
}

void SparseTraining::topology_update(int64_t t) {
  const double fraction = prune_fraction(t);
  const size_t B = mask_.block_size(), slots = mask_.slots();
  // The blocks' L1 norms, read back; the decision on the host; the weights zeroed by ops.
  for (const SparseView& v : mask_.views())
    ops_.block_l1_norms(l1_.data() + v.slot0, params_.data() + v.offset,
                        blocks_dev_.data() + v.slot0, v.active, B, v.numel);
  std::vector<double> l1(slots);
  l1_.download(l1.data(), slots);
  std::vector<int32_t> changed;  // slots, increasing
  for (const BlockMask::ViewChange& c : mask_.prune_and_regrow(l1, fraction, seed_, uint64_t(t))) {
    zero_blocks_of(c.k, c.zeroed);
    for (size_t s : c.slots) changed.push_back(int32_t(s));
  }
  blocks_dev_.upload(mask_.blocks().data(), slots);
  // The changed slots' moments restart at zero (a slot of the compact buffers is a block of B).
  list_dev_.upload(changed.data(), changed.size());
  ops_.zero_blocks(m_c_.data(), list_dev_.data(), changed.size(), B, slots * B);
  ops_.zero_blocks(v_c_.data(), list_dev_.data(), changed.size(), B, slots * B);
  if (fixes_.step_reset)  // SMET's code: 1, so 2 at the first step
    ops_.assign_at(steps_.data(), list_dev_.data(), changed.size(), 1);
  std::fill(fresh_.data(), fresh_.data() + fresh_.size(), uint8_t{0});
  for (int32_t s : changed) fresh_[size_t(s)] = 1;
  count_fresh();
  check_masks_agree(t);
  metrics_.emplace_back("topology_update", 1.0);
  metrics_.emplace_back("prune_fraction", fraction);
  // Every pruned block's slot takes a regrown block: the two counts are equal by construction.
  metrics_.emplace_back("pruned_blocks", double(changed.size()));
  metrics_.emplace_back("regrown_blocks", double(changed.size()));
  metrics_.emplace_back("mask_hash", double(mask_.hash()));
}

void SparseTraining::check_masks_agree(int64_t t) {
  if (world_ == 1) return;
  const int64_t h = int64_t(mask_.hash());
  int64_t v[2] = {h, -h};  // max of both: max and -min
  control_.all_reduce(v, 2, DType::I64, ReduceOp::MAX).wait();
  GOSSAMER_CHECK(v[0] == -v[1],
                 "step %lld: the ranks' %s masks differ after a topology update (hash %lld on rank "
                 "%d; they must depend only on the seed, the step and identical weights)",
                 (long long)t, name_, (long long)h, rank_);
}

std::vector<StateTensor> SparseTraining::state() {
  const std::string p = std::string(name_) + ".";
  const size_t slots = mask_.slots(), B = mask_.block_size();
  const MemoryOps& mem = *ops_.memory;
  return {StateTensor::replicated(p + "blocks", mask_.blocks().data(), slots),
          StateTensor::replicated(p + "block_steps", steps_.data(), slots).in(mem),
          StateTensor::replicated(p + "regrown", fresh_.data(), slots),
          StateTensor::replicated(p + "m", m_c_.data(), slots * B).in(mem),
          StateTensor::replicated(p + "v", v_c_.data(), slots * B).in(mem),
          StateTensor::replicated(p + "dense_m", dense_m_.data(), dense_total_).in(mem),
          StateTensor::replicated(p + "dense_v", dense_v_.data(), dense_total_).in(mem)};
}

void SparseTraining::state_loaded() {
  loaded_ = true;
  mask_.check((std::string(name_) + ".blocks of the checkpoint").c_str());
  const size_t slots = mask_.slots();
  blocks_dev_.upload(mask_.blocks().data(), slots);
  std::vector<int32_t> steps(slots);
  steps_.download(steps.data(), slots);
  for (size_t s = 0; s < slots; ++s)
    GOSSAMER_CHECK(steps[s] >= 0 && fresh_[s] <= 1,
                   "%s: the checkpoint's block_steps/regrown hold invalid values at slot %zu",
                   name_, s);
  count_fresh();
}

}  // namespace gossamer::optim
