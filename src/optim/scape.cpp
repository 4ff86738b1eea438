// SCAPE (see scape.h): one step is take the mask, build the payload (residual or local
// momentum), reduce it densely or at the mask, agree on finiteness, clip, AdamS on the selected
// owned coordinates, distribute the updated values, select and send the next mask. Each phase
// is one member function, in that order: this file holds the configuration, construction, the
// step and the checkpoint state; scape_mask.cpp the mask's selection and exchange;
// scape_update.cpp the payload, its reduction, the update and the distribution.
#include "optim/scape.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "optim/scape_detail.h"
#include "optim/selection_report.h"
#include "optim/sync_common.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

using comm::DType;
using comm::ReduceOp;

std::unique_ptr<Optimizer> make_scape(const OptimizerSetup& setup) {
  return std::make_unique<Scape>(setup);
}

void ScapeConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(sparsity >= 0 && sparsity < 1, "%ssparsity: must lie in [0, 1), found %g",
                 p.c_str(), sparsity);
  GOSSAMER_CHECK(dense_warmup_steps >= kDenseWarmupFromSchedule,
                 "%sdense_warmup_steps: must be >= 0, or -1 for schedule.warmup_steps, found %lld",
                 p.c_str(), (long long)dense_warmup_steps);
  GOSSAMER_CHECK(dense_refresh_every >= 0, "%sdense_refresh_every: must be >= 0", p.c_str());
  GOSSAMER_CHECK(catch_up_max >= 1 && catch_up_max <= 1000000,
                 "%scatch_up_max: must lie in [1, 1000000], found %lld", p.c_str(),
                 (long long)catch_up_max);
  GOSSAMER_CHECK(catch_up_max == 1 || reading == ScapeReading::SCAPE_READING_B,
                 "%scatch_up_max: only reading \"B\" catches up (found %lld with reading \"A\")",
                 p.c_str(), (long long)catch_up_max);
  GOSSAMER_CHECK(shard_block_kb > 0 && shard_block_kb * 256 >= 1,
                 "%sshard_block_kb: must be at least 1/256 (one fp32 value), found %g", p.c_str(),
                 shard_block_kb);
  GOSSAMER_CHECK(sparsity_ramp_steps >= 0, "%ssparsity_ramp_steps: must be >= 0, found %lld",
                 p.c_str(), (long long)sparsity_ramp_steps);
  GOSSAMER_CHECK(ramp_start_sparsity >= 0 && ramp_start_sparsity < 1,
                 "%sramp_start_sparsity: must lie in [0, 1), found %g", p.c_str(),
                 ramp_start_sparsity);
  GOSSAMER_CHECK(!stale_momentum || reading == ScapeReading::SCAPE_READING_A,
                 "%sstale_momentum: reading A only (reading B catches up with catch_up_max)",
                 p.c_str());
  const bool feedback_a = error_feedback == ErrorFeedback::ERROR_FEEDBACK_GRADIENT ||
                          (reading == ScapeReading::SCAPE_READING_A && residual &&
                           normaliser != ScapeNormaliser::SCAPE_NORMALISER_AGE);
  GOSSAMER_CHECK(feedback_a,
                 "%serror_feedback: \"replay\" and \"momentum\" need reading \"A\" with residual "
                 "true and normaliser \"step\" or \"frozen\" (they divide the mass themselves; "
                 "the default normaliser is \"age\")",
                 p.c_str());
  GOSSAMER_CHECK(reading == ScapeReading::SCAPE_READING_A ||
                     normaliser != ScapeNormaliser::SCAPE_NORMALISER_FROZEN,
                 "%snormaliser: \"frozen\" is reading A's; reading \"B\" rebuilds the normaliser "
                 "from the mean gradient of the steps since the last update (\"step\" and \"age\" "
                 "are the same there)",
                 p.c_str());
  GOSSAMER_CHECK(error_feedback != ErrorFeedback::ERROR_FEEDBACK_MOMENTUM ||
                     !momentum_factor_masking || dense_refresh_every == 0,
                 "%smomentum_factor_masking: the restarted local momenta assume no dense refresh "
                 "after the warm-up (set dense_refresh_every 0 or momentum_factor_masking false)",
                 p.c_str());
  GOSSAMER_CHECK(mask_age_bonus >= 0, "%smask_age_bonus: must be >= 0, found %g", p.c_str(),
                 mask_age_bonus);
}

namespace {

// The owned runs of every tensor: {local offset, length, view index}, pieces in order.
std::vector<Scape::TensorRun> tensor_runs_of(const model::ParamLayout& layout,
                                             const OwnedShard& own) {
  std::vector<Scape::TensorRun> runs;
  const auto& views = layout.views();
  for (const ShardPiece& piece : own.pieces)
    for (size_t v = 0; v < views.size(); ++v) {
      const size_t lo = std::max(piece.begin, views[v].offset);
      const size_t hi = std::min(piece.end, views[v].offset + views[v].numel);
      if (lo < hi) runs.push_back({piece.local + (lo - piece.begin), hi - lo, v});
    }
  return runs;
}

}  // namespace

using scape_detail::local_to_global;

// The parallel mode and the config agree; where the mask comes from at stage 0.
void Scape::check_modes(int zero_stage) {
  GOSSAMER_CHECK(zero_stage <= 1,
                 "parallel.zero_stage: scape shards like ZeRO-1 (1) or keeps its momentum "
                 "replicated (0); found %d",
                 zero_stage);
  GOSSAMER_CHECK(total_ < (size_t(1) << 32), "scape: %zu parameters exceed 32-bit mask indices",
                 total_);
  // Unsharded, every rank can select the whole mask itself only from what all ranks share (the
  // replicated momentum); a score from a rank's own residual or gradient would differ by rank.
  const bool own_score =
      sc_.mask_score == MaskScore::MASK_SCORE_GRADIENT ||
      (sc_.mask_score == MaskScore::MASK_SCORE_MOMENTUM_RESIDUAL && use_residual_);
  mask_from_rank0_ = !sharded_ && world_ > 1 && own_score;
  if (mask_from_rank0_)
    log_info(
        "scape: parallel.zero_stage 0 with mask_score \"%s\": rank 0 selects the mask from its "
        "own residual and sends it to every rank (one-step delayed, like the sharded exchange)",
        std::string(enum_name(sc_.mask_score)).c_str());
  if (sc_.dense_warmup_steps < 0) {  // only when built from a config that was not parsed
    log_warn(
        "scape: optimizer.scape.dense_warmup_steps -1 (the lr warm-up) was not resolved "
        "against a schedule (run/run_config.cpp does): no dense warm-up steps");
    sc_.dense_warmup_steps = 0;
  }
  if (reading_b_) {
    GOSSAMER_CHECK(sharded_ || world_ == 1,
                   "optimizer.scape.reading: \"B\" needs parallel.zero_stage 1 at world size > 1 "
                   "(each owner scores its mask from its own local momentum)");
  }
}

Scape::Scape(const OptimizerSetup& setup)
    : ShardedOptimizer(setup,
                       /*sharded=*/setup.parallel.zero_stage >= 1 && setup.comm.size() > 1,
                       size_t(setup.config.scape.shard_block_kb * 1000 / sizeof(float))),
      sc_(setup.config.scape),
      layout_(setup.layout),
      sharded_(setup.parallel.zero_stage >= 1 && setup.comm.size() > 1),
      code_form_(setup.config.adams.form == AdamsForm::ADAMS_FORM_CODE),
      density_(1.0 - sc_.sparsity),
      mask_density_(density_),
      reading_b_(sc_.reading == ScapeReading::SCAPE_READING_B),
      use_residual_(!reading_b_ && sc_.residual),
      momentum_feedback_(sc_.error_feedback == ErrorFeedback::ERROR_FEEDBACK_MOMENTUM),
      local_clip_(reading_b_ || momentum_feedback_) {
  check_modes(setup.parallel.zero_stage);
  const size_t owned = own_.size;
  const MemoryOps& mem = *ops_.memory;
  m_ = Buffer<float>(owned, mem);
  if (use_residual_) residual_ = Buffer<float>(total_, mem);
  if (reading_b_ || momentum_feedback_) local_m_ = Buffer<float>(total_, mem);
  // Reading A starts "unknown" (-1: counted as updated the step before) so that a checkpoint
  // written before it kept update steps still loads; its dense first step sets every entry.
  last_host_.assign(owned, reading_b_ ? 0.0f : -1.0f);
  last_ = Buffer<float>(owned, mem);
  last_.upload(last_host_.data(), owned);
  recount_ages();
  if (sc_.normaliser == ScapeNormaliser::SCAPE_NORMALISER_FROZEN)
    den_sq_ = Buffer<float>(owned, mem);
  if (sc_.stale_momentum) stale_dir_ = Buffer<float>(total_, mem);
  std::vector<uint8_t> decay(owned, 0);
  for (const OwnedRun& r : owned_runs(setup.layout, own_))
    if (r.decay)
      std::fill(decay.begin() + ptrdiff_t(r.local), decay.begin() + ptrdiff_t(r.local + r.n), 1);
  decay_ = Buffer<uint8_t>(owned, mem);
  decay_.upload(decay.data(), owned);
  if (sc_.mask_per_tensor) {
    tensor_runs_ = tensor_runs_of(setup.layout, own_);
    tensor_sq_.assign(setup.layout.views().size(), 0.0);
    tensor_owned_.assign(setup.layout.views().size(), 0.0);
    for (const TensorRun& r : tensor_runs_) tensor_owned_[r.tensor] += double(r.n);
    run_sq_ = Buffer<double>(tensor_runs_.size(), mem);
    run_sq_host_.assign(tensor_runs_.size(), 0.0);
  }
  all_owned_.resize(owned);
  for (size_t i = 0; i < owned; ++i) all_owned_[i] = uint32_t(i);
  all_owned_dev_ = Buffer<uint32_t>(owned, mem);
  all_owned_dev_.upload(all_owned_.data(), owned);
  if (sharded_) {  // unsharded, owned order is flat order: all_owned_dev_ serves both
    std::vector<uint32_t> own_global = all_owned_;
    local_to_global(own_.pieces, own_global.data(), owned);
    own_global_dev_ = Buffer<uint32_t>(owned, mem);
    own_global_dev_.upload(own_global.data(), owned);
  }
  scores_ = Buffer<float>(owned, mem);
  if (sharded_) {
    for (int q = 0; q < world_; ++q) rank_pieces_.push_back(shards_->pieces(q));
    pack_ = Buffer<float>(total_, mem);
    build_pack_runs();
    log_info(
        "scape: shards: every block of %zu values split over %d ranks (%zu blocks; "
        "optimizer.scape.shard_block_kb = %g)",
        shards_->bucket_size(), world_, shards_->num_buckets(), sc_.shard_block_kb);
  }
  // The mask buffers at the largest density of the run (the ramp's start), so that no step
  // allocates; a mask loaded from a checkpoint written at another sparsity may still grow them.
  // None when every step is dense (sparsity 0).
  const double saved = mask_density_;
  if (sc_.sparsity_ramp_steps > 0)
    mask_density_ = std::max(density_, 1.0 - sc_.ramp_start_sparsity);
  size_t k_total = 0, send_bytes = 0, recv_bytes = 0;
  for (int q = 0; q < world_ && density_ < 1.0; ++q) {
    if (!sharded_ && q > 0) break;
    const size_t n = sharded_ ? shards_->size(q) : total_;
    const size_t bytes = std::max(mask_bytes(MaskEncoding::INDICES, k_of(q), n),
                                  mask_bytes(MaskEncoding::BITMAP, k_of(q), n));
    k_total += k_of(q);
    recv_bytes += bytes;
    if (q == rank_) send_bytes = bytes;
  }
  next_dev_ = Buffer<uint32_t>(density_ < 1.0 ? k_of(rank_) : 0, mem);
  mask_density_ = saved;
  mask_dev_ = Buffer<uint32_t>(k_total, mem);
  local_dev_ = Buffer<uint32_t>(sharded_ ? next_dev_.size() : 0, mem);  // unsharded: mask_dev_
  compact_ = Buffer<float>(std::max(k_total, sharded_ ? owned : size_t{0}), mem);
  if (sharded_ || mask_from_rank0_) {
    wire_send_dev_ = Buffer<uint8_t>(send_bytes, mem);
    wire_recv_dev_ = Buffer<uint8_t>(recv_bytes, mem);
  }
  mask_flags_.assign(owned, 0);
  cur_counts_.assign(size_t(world_), 0);
}

Scape::~Scape() {
  try {
    if (mask_in_flight_) mask_work_.wait();
  } catch (...) {
  }
}

size_t Scape::k_of(int rank) const {
  const size_t n = sharded_ ? shards_->size(rank) : total_;
  return std::min(n, size_t(std::ceil(mask_density_ * double(n))));
}

double Scape::density_at(int64_t t) const {
  const double start = 1.0 - sc_.ramp_start_sparsity;
  if (sc_.sparsity_ramp_steps <= 0 || start <= density_) return density_;
  // Geometric in density from `start` at the first sparse step to density_ R steps later.
  const double s = std::clamp(
      double(t - sc_.dense_warmup_steps - 1) / double(sc_.sparsity_ramp_steps), 0.0, 1.0);
  return std::max(density_, std::pow(start, 1.0 - s) * std::pow(density_, s));
}

bool Scape::dense_step(int64_t t) const {
  return density_ >= 1.0 || t <= sc_.dense_warmup_steps ||
         (sc_.dense_refresh_every > 0 && t % sc_.dense_refresh_every == 0);
}

void Scape::micro_batch_begin(int index, int count) {
  if (index == 0 && relaunch_after_load_) {
    relaunch_after_load_ = false;
    launch_mask_exchange(MaskEncoding::BITMAP);  // counts of a loaded mask are not known
  }
}

// ---- one step -----------------------------------------------------------------------------

StepResult Scape::step(const StepContext& ctx) {
  GOSSAMER_CHECK(attached(), "scape: step before attach()");
  metrics_.clear();
  // Both communicators' bytes: on device buffers the flags and norms take the control one.
  const bool two_comms = &control_ != &comm_;
  const comm::CommStats before = comm_.stats(),
                        control_before = two_comms ? control_.stats() : comm::CommStats{};
  const int64_t t = ctx.t;
  if (relaunch_after_load_) {  // the caller skipped micro_batch_begin
    relaunch_after_load_ = false;
    launch_mask_exchange(MaskEncoding::BITMAP);
  }
  const bool have_mask = mask_in_flight_ || mask_ready_;
  StepFigures fig;
  fig.dense = dense_step(t) || !have_mask;
  fig.mask_wait_s = take_mask(have_mask, &fig.mask_exchange_s);
  if (fig.dense) cur_mask_.clear();

  // The gradient score is taken from the residual-corrected gradient before it is sent.
  double local_sq = 0;
  float* a = payload(&local_sq);
  if (!dense_step(t + 1) && sc_.mask_score == MaskScore::MASK_SCORE_GRADIENT && selects_mask()) {
    const float* src = owned_values(use_residual_ ? residual_.data() : grads_.data());
    ops_.mask_score(scores_.data(), 1.0f, src, 0.0f, nullptr, own_.size);
  }
  Reduced r = fig.dense ? reduce_dense(a, local_sq) : reduce_sparse(a, local_sq);

  agree_gradients_finite(control_, r.finite, t);
  // Telemetry summed over ranks with the norm: the residual that stays (what was not sent),
  // and the update ages.
  const double unsent_sq =
      use_residual_ && !fig.dense ? std::max(0.0, residual_sq_ - r.sent_sq) : 0.0;
  const double age_sum = ages_.known * double(t - 1) - ages_.sum_last;  // as of step t - 1
  fig.sums = {float(unsent_sq), float(ages_.covered), float(age_sum), float(ages_.known)};
  StepResult result;
  result.grad_norm = clip(r, fig.sums);
  settle_residual(r, fig.dense, t);
  update_selected(r, fig.dense, ctx);
  fig.param_bytes = distribute_params(r, fig.dense);
  apply_stale_moves(ctx.lr, fig.dense);
  select_next_mask(t);
  fig.grad_bytes = r.bytes;
  fig.bytes_sent = comm_.stats().since(before).bytes_sent();
  if (two_comms) fig.bytes_sent += control_.stats().since(control_before).bytes_sent();
  record_metrics(fig);
  return result;
}

void Scape::record_metrics(const StepFigures& fig) {
  double jac = std::nan("");
  if (!fig.dense) {
    if (!prev_packed_.empty()) jac = jaccard(cur_packed_, prev_packed_);
    prev_packed_ = cur_packed_;
  }
  metrics_ = {
      {"dense", fig.dense ? 1.0 : 0.0},
      {"selected", double(fig.dense ? total_ : cur_mask_.size())},
      {"grad_bytes", double(fig.grad_bytes)},
      {"param_bytes", double(fig.param_bytes)},
      {"critical_bytes", double(fig.bytes_sent) - mask_issue_bytes_},
      {"mask_bytes", mask_issue_bytes_},
      {"mask_wait_s", fig.mask_wait_s},
  };
  if (use_residual_) metrics_.push_back({"residual_norm", std::sqrt(double(fig.sums[0]))});
  metrics_.push_back({"coverage", double(fig.sums[1]) / double(total_)});
  if (fig.sums[3] > 0) metrics_.push_back({"mean_age", double(fig.sums[2]) / double(fig.sums[3])});
  if (!std::isnan(jac)) metrics_.push_back({"mask_jaccard", jac});
  if (!std::isnan(fig.mask_exchange_s))
    metrics_.push_back({"mask_exchange_s", fig.mask_exchange_s});
  if (!fig.dense && sc_.log_selection_by_tensor)
    for (auto& f : selection_by_tensor(layout_, cur_mask_)) metrics_.push_back(std::move(f));
}

// ---- checkpoint state ---------------------------------------------------------------------

std::vector<StateTensor> Scape::state() {
  if (mask_from_rank0_ && mask_in_flight_) {  // every rank saves rank 0's mask
    receive_rank0_mask();
    mask_ready_ = true;
  }
  std::fill(mask_flags_.begin(), mask_flags_.end(), uint8_t{0});
  for (uint32_t i : next_own_) mask_flags_[i] = 1;
  has_mask_ = next_own_.empty() ? 0 : 1;
  const MemoryOps& mem = *ops_.memory;
  std::vector<StateTensor> s = {StateTensor::sharded("scape.m", m_.data(), own_).in(mem),
                                StateTensor::sharded("scape.next_mask", mask_flags_.data(), own_),
                                StateTensor::replicated("scape.has_next_mask", &has_mask_, 1)};
  if (use_residual_)
    s.push_back(StateTensor::summed_rows("scape.residual", residual_.data(), total_).in(mem));
  if (local_m_.size() > 0)  // the ranks' local momenta matter only through their sum
    s.push_back(StateTensor::summed_rows("scape.local_momentum", local_m_.data(), total_).in(mem));
  // Reading A kept no update steps before the age options: such files load with "unknown".
  s.push_back(StateTensor::sharded("scape.last_update", last_.data(), own_).in(mem));
  s.back().optional = !reading_b_;
  if (den_sq_.size() > 0)
    s.push_back(StateTensor::sharded("scape.normaliser_sq", den_sq_.data(), own_).in(mem));
  if (sc_.stale_momentum) {  // the same on every rank; a file without it: no stale moves yet
    s.push_back(StateTensor::replicated("scape.stale_step", stale_dir_.data(), total_).in(mem));
    s.back().optional = true;
  }
  return s;
}

void Scape::state_loaded() {
  last_.download(last_host_.data(), last_host_.size());
  recount_ages();
  next_own_.clear();
  for (size_t i = 0; i < mask_flags_.size(); ++i)
    if (mask_flags_[i] != 0) next_own_.push_back(uint32_t(i));
  prev_packed_.clear();
  mask_in_flight_ = mask_ready_ = relaunch_after_load_ = false;
  if (has_mask_ != 0) {
    if (sharded_)
      relaunch_after_load_ = true;
    else
      mask_ready_ = true;
  }
}

size_t Scape::state_bytes() const {
  return (m_.size() + residual_.size() + local_m_.size() + last_.size() + stale_dir_.size() +
          den_sq_.size()) *
         sizeof(float);
}

}  // namespace gossamer::optim
