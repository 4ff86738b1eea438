// SCAPE (see scape.h): one step is take the mask, build the payload (residual or local
// momentum), reduce it densely or at the mask, agree on finiteness, clip, AdamS on the selected
// owned coordinates, distribute the updated values, select and send the next mask. Each phase
// is one member function below, in that order.
#include "optim/scape.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
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

// Rank-local (packed) indices of a sorted mask to flat indices, in place, walking the rank's
// pieces (in flat = local order). Stays sorted.
void local_to_global(const std::vector<ShardPiece>& pieces, uint32_t* idx, size_t n) {
  size_t p = 0;
  for (size_t j = 0; j < n; ++j) {
    while (idx[j] >= pieces[p].local + pieces[p].size()) ++p;
    idx[j] = uint32_t(pieces[p].begin + (idx[j] - pieces[p].local));
  }
}

// The inverse, for a sorted list of flat indices this rank owns.
void global_to_local(const std::vector<ShardPiece>& pieces, const uint32_t* idx, size_t n,
                     uint32_t* out) {
  size_t p = 0;
  for (size_t j = 0; j < n; ++j) {
    while (idx[j] >= pieces[p].end) ++p;
    out[j] = uint32_t(pieces[p].local + (idx[j] - pieces[p].begin));
  }
}

// Grows b to n elements when smaller (the mask buffers after loading a denser mask); the
// contents are not kept.
template <class T>
void reserve(Buffer<T>& b, size_t n, const MemoryOps& memory) {
  if (b.size() < n) b = Buffer<T>(n, memory);
}

kernels::Accumulated accumulated_kind(ErrorFeedback f) {
  switch (f) {
    case ErrorFeedback::ERROR_FEEDBACK_REPLAY:
      return kernels::Accumulated::GRADIENT_REPLAY;
    case ErrorFeedback::ERROR_FEEDBACK_MOMENTUM:
      return kernels::Accumulated::MOMENTUM_SUM;
    default:
      return kernels::Accumulated::ONE_GRADIENT;
  }
}

}  // namespace

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
        "against a schedule (train/run_config.cpp does): no dense warm-up steps");
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

// ---- the mask exchange --------------------------------------------------------------------

void Scape::launch_mask_exchange(MaskEncoding encoding) {
  if (!sharded_ && !mask_from_rank0_) {  // every rank selected the same full mask
    mask_ready_ = true;
    return;
  }
  // Sharded: every owner sends its shard's mask; unsharded: rank 0 sends the whole mask.
  wire_encoding_ = encoding;
  wire_counts_.assign(size_t(world_), 0);
  size_t recv_total = 0;
  for (int q = 0; q < world_; ++q) {
    if (!sharded_ && q != 0) continue;
    const size_t n = sharded_ ? shards_->size(q) : total_;
    wire_counts_[size_t(q)] = mask_bytes(encoding, k_of(q), n);
    recv_total += wire_counts_[size_t(q)];
  }
  const size_t owned = own_.size;
  wire_send_.resize(wire_counts_[size_t(rank_)]);
  if (wire_send_.empty()) {
    // Unsharded, not rank 0: nothing to send.
  } else if (encoding == MaskEncoding::INDICES) {
    GOSSAMER_CHECK(next_own_.size() == k_of(rank_), "scape: mask shard of %zu, expected %zu",
                   next_own_.size(), k_of(rank_));
    std::memcpy(wire_send_.data(), next_own_.data(), next_own_.size() * sizeof(uint32_t));
  } else {
    encode_bitmap(next_own_, owned, wire_send_.data());
  }
  wire_recv_.resize(recv_total);
  // Through the op table's memory: the buffers' communicator takes device buffers on GPUs.
  reserve(wire_send_dev_, wire_send_.size(), *ops_.memory);
  reserve(wire_recv_dev_, recv_total, *ops_.memory);
  wire_send_dev_.upload(wire_send_.data(), wire_send_.size());
  const int64_t before = comm_.stats().bytes_sent();
  mask_work_ =
      comm_.all_gather(wire_send_dev_.data(), wire_recv_dev_.data(), wire_counts_, DType::U8);
  mask_issue_bytes_ = double(comm_.stats().bytes_sent() - before);
  mask_in_flight_ = true;
}

// Unsharded with the mask from rank 0: waits for it and takes it as this rank's next mask.
void Scape::receive_rank0_mask() {
  mask_work_.wait();
  mask_in_flight_ = false;
  if (rank_ == 0) return;
  wire_recv_dev_.download(wire_recv_.data(), wire_recv_.size());
  next_own_.clear();
  if (wire_encoding_ == MaskEncoding::INDICES) {
    next_own_.resize(wire_counts_[0] / sizeof(uint32_t));
    std::memcpy(next_own_.data(), wire_recv_.data(), wire_counts_[0]);
  } else {
    decode_bitmap(wire_recv_.data(), total_, 0, next_own_);
  }
}

void Scape::finish_mask_exchange() {
  cur_mask_.clear();
  cur_packed_.clear();
  if (!sharded_) {
    if (mask_in_flight_) receive_rank0_mask();
    cur_mask_ = next_own_;  // local == global
    cur_packed_ = next_own_;
    cur_counts_.assign(size_t(world_), 0);
    cur_counts_[0] = cur_mask_.size();
    mask_ready_ = false;
    upload_mask();
    return;
  }
  GOSSAMER_CHECK(mask_in_flight_, "scape: no mask exchange in flight");
  mask_work_.wait();
  mask_in_flight_ = false;
  wire_recv_dev_.download(wire_recv_.data(), wire_recv_.size());
  // Rank by rank (the order of the compact reduce-scatter): each rank's local indices, kept
  // as packed keys (rank base + local: sorted) and mapped to flat indices.
  size_t offset = 0, base = 0;
  for (int q = 0; q < world_; ++q) {
    const size_t before = cur_mask_.size();
    const uint8_t* seg = wire_recv_.data() + offset;
    if (wire_encoding_ == MaskEncoding::INDICES) {
      const size_t k = wire_counts_[size_t(q)] / sizeof(uint32_t);
      cur_mask_.resize(before + k);
      std::memcpy(cur_mask_.data() + before, seg, k * sizeof(uint32_t));
    } else {
      decode_bitmap(seg, shards_->size(q), 0, cur_mask_);
    }
    const size_t k = cur_mask_.size() - before;
    for (size_t j = 0; j < k; ++j) cur_packed_.push_back(uint32_t(base + cur_mask_[before + j]));
    local_to_global(rank_pieces_[size_t(q)], cur_mask_.data() + before, k);
    cur_counts_[size_t(q)] = k;
    offset += wire_counts_[size_t(q)];
    base += shards_->size(q);
  }
  upload_mask();
}

// cur_mask_, and this rank's part of it as local indices, to the op table's memory.
void Scape::upload_mask() {
  size_t offset = 0, n = cur_mask_.size();  // unsharded: every rank updates the whole mask
  if (sharded_) {
    for (int q = 0; q < rank_; ++q) offset += cur_counts_[size_t(q)];
    n = cur_counts_[size_t(rank_)];
  }
  cur_local_.resize(n);
  global_to_local(own_.pieces, cur_mask_.data() + offset, n, cur_local_.data());
  reserve(mask_dev_, cur_mask_.size(), *ops_.memory);
  reserve(compact_, cur_mask_.size(), *ops_.memory);
  mask_dev_.upload(cur_mask_.data(), cur_mask_.size());
  if (!sharded_) return;  // own_ is all of [0, P) at local 0: the local indices are mask_dev_'s
  reserve(local_dev_, n, *ops_.memory);
  local_dev_.upload(cur_local_.data(), n);
}

// The mask of this step, if one was sent: waits for its exchange; returns the seconds waited.
double Scape::take_mask(bool have_mask, double* exchange_s) {
  *exchange_s = std::nan("");
  if (!have_mask) return 0;
  Stopwatch w;
  finish_mask_exchange();
  const double waited = w.seconds();
  if (sharded_ || mask_from_rank0_) *exchange_s = mask_work_.duration();
  mask_ready_ = false;
  return waited;
}

// optimizer.scape.mask_per_tensor: scores /= RMS of the scores of the coordinate's tensor (its
// owned part); a tensor whose scores are all zero stays zero.
void Scape::normalise_scores_per_tensor(float* scores) {
  // Every run's sum of squares left in the table's memory, read back once (one wait, not one
  // per run), added per tensor in run order.
  for (size_t j = 0; j < tensor_runs_.size(); ++j)
    ops_.sum_squares_to(run_sq_.data() + j, scores + tensor_runs_[j].local, tensor_runs_[j].n);
  run_sq_.download(run_sq_host_.data(), tensor_runs_.size());
  std::fill(tensor_sq_.begin(), tensor_sq_.end(), 0.0);
  for (size_t j = 0; j < tensor_runs_.size(); ++j)
    tensor_sq_[tensor_runs_[j].tensor] += run_sq_host_[j];
  for (const TensorRun& r : tensor_runs_) {
    const double rms = std::sqrt(tensor_sq_[r.tensor] / tensor_owned_[r.tensor]);
    if (rms > 0) ops_.scale(scores + r.local, float(1.0 / rms), r.n);
  }
}

const float* Scape::owned_values(const float* flat) {
  if (!sharded_) return flat;  // owned order is flat order
  ops_.gather(scores_.data(), flat, own_global_dev_.data(), own_.size);
  return scores_.data();
}

// The mask score of every owned coordinate as of the end of step t, in scores_ (the gradient
// score was filled by step() before the reduction).
void Scape::score_owned(int64_t t) {
  const size_t owned = own_.size;
  float* scores = scores_.data();
  // Without a residual (reading B: the local momentum has taken every gradient already) nothing
  // is pending, and the momentum_residual score is the momentum's.
  const bool pending = sc_.mask_score == MaskScore::MASK_SCORE_MOMENTUM_RESIDUAL && use_residual_;
  if (!pending && sc_.mask_score != MaskScore::MASK_SCORE_GRADIENT) {
    // Reading B: the local momentum (flat); A: the owner's momentum.
    const float* mm = reading_b_ ? owned_values(local_m_.data()) : m_.data();
    ops_.mask_score(scores, 1.0f, mm, 0.0f, nullptr, owned);
  } else if (pending) {
    // The momentum the coordinate would have if its pending residual were applied now; the
    // owner's own residual, times the ranks, estimates the sum over ranks.
    const float b1 = float(cfg_.beta1), n = float(world_);
    ops_.mask_score(scores, b1, m_.data(), (1 - b1) * n, owned_values(residual_.data()), owned);
  }
  if (sc_.mask_per_tensor) normalise_scores_per_tensor(scores);
  if (sc_.mask_age_bonus > 0)  // exploration: long-unselected coordinates score higher
    ops_.age_bonus(scores, last_.data(), float(sc_.mask_age_bonus), float(t), owned);
}

// The mask of step t+1 from the scores of the owned slice (scores_, the momentum scores filled
// here); its exchange overlaps step t+1's compute.
void Scape::select_next_mask(int64_t t) {
  mask_issue_bytes_ = 0;
  if (dense_step(t + 1)) {
    next_own_.clear();
    return;
  }
  mask_density_ = density_at(t + 1);
  if (selects_mask()) {
    score_owned(t);
    const size_t k = k_of(rank_);
    reserve(next_dev_, k, *ops_.memory);
    ops_.top_k_indices(scores_.data(), own_.size, k, next_dev_.data());
    next_own_.resize(k);
    next_dev_.download(next_own_.data(), k);
  } else {
    next_own_.clear();  // rank 0's arrives with the exchange
  }
  MaskEncoding enc = MaskEncoding::INDICES;
  if (sc_.mask_encoding == MaskWire::MASK_WIRE_BITMAP) {
    enc = MaskEncoding::BITMAP;
  } else if (sc_.mask_encoding == MaskWire::MASK_WIRE_AUTO) {
    // Decided from every rank's sizes, so all ranks agree.
    size_t idx_bytes = 0, bit_bytes = 0;
    for (int q = 0; q < world_; ++q) {
      const size_t n = sharded_ ? shards_->size(q) : total_;
      idx_bytes += mask_bytes(MaskEncoding::INDICES, k_of(q), n);
      bit_bytes += mask_bytes(MaskEncoding::BITMAP, k_of(q), n);
    }
    enc = bit_bytes < idx_bytes ? MaskEncoding::BITMAP : MaskEncoding::INDICES;
  }
  launch_mask_exchange(enc);
}

// ---- the payload and its reduction --------------------------------------------------------

size_t Scape::rank_base(int rank) const {
  size_t base = 0;
  for (int q = 0; q < rank; ++q) base += shards_->size(q);
  return base;
}

// The dense steps' moves as run lists in the op table's memory (one op call each, not one copy
// per piece): flat -> every rank's pieces packed rank after rank (the order of a
// reduce-scatter's counts), the way back, and this rank's pieces to its place in the pack.
void Scape::build_pack_runs() {
  std::vector<ShardPiece> all, own;  // local offsets in the rank-major pack
  size_t base = 0;
  for (int q = 0; q < world_; ++q) {
    for (ShardPiece piece : rank_pieces_[size_t(q)]) {
      piece.local += base;
      all.push_back(piece);
      if (q == rank_) own.push_back(piece);
    }
    base += shards_->size(q);
  }
  pack_runs_ = piece_runs(all, PieceMove::TO_PACKED, *ops_.memory);
  unpack_runs_ = piece_runs(all, PieceMove::FROM_PACKED, *ops_.memory);
  own_pack_runs_ = piece_runs(own, PieceMove::TO_PACKED, *ops_.memory);
}

void Scape::pack_rank_major(const float* flat, float* out) const {
  ops_.copy_runs(out, flat, pack_runs_.data(), pack_runs_.size());
}

void Scape::unpack_rank_major(const float* in, float* flat) const {
  ops_.copy_runs(flat, in, unpack_runs_.data(), unpack_runs_.size());
}

float* Scape::accumulate_local_momentum(const float* g, double* local_sq) {
  // Each rank clips its own gradient (DGC's local clipping: there is no dense global gradient to
  // take the norm of); the gradients arrive scaled by 1/ranks, so the rank's own norm is ranks
  // times theirs. At world size 1 this is AdamS's global-norm clipping.
  const size_t P = total_;
  const double sq = ops_.sum_squares(g, P) * double(world_) * double(world_);
  *local_sq = sq;
  double coef = 1.0;
  if (cfg_.grad_clip > 0 && std::isfinite(sq))
    coef = std::min(1.0, cfg_.grad_clip / (std::sqrt(sq) + 1e-6));
  const float b1 = float(cfg_.beta1), w = float((1.0 - cfg_.beta1) * coef);
  float* u = local_m_.data();
  ops_.axpby(u, w, g, b1, P);  // u = b1 u + w g
  return u;
}

// What is sent, at the mask: a = g + e_r (reading A, in the residual buffer), g (A without
// residual), the local momentum u_r = beta1 u_r + (1 - beta1) g (reading B) or a = u_r + e_r
// (reading A with error_feedback "momentum").
float* Scape::payload(double* local_sq) {
  float* g = grads_.data();
  float* a = use_residual_ ? residual_.data() : g;
  if (local_clip_) g = accumulate_local_momentum(g, local_sq);
  // e_r += g, and the squared norm of the result (the residual telemetry) in the same pass.
  if (use_residual_) residual_sq_ = ops_.accumulate_sum_squares(residual_.data(), g, total_);
  return reading_b_ ? g : a;
}

Scape::Reduced Scape::reduce_dense(float* a, double local_sq) {
  const size_t P = total_;
  float* g = grads_.data();
  Reduced r;
  r.local_sq = local_sq;
  const int64_t before = comm_.stats().bytes_sent();
  // Everything is sent: with a residual, its norm is known from the accumulation pass.
  r.sent_sq = reading_b_ ? 0.0 : use_residual_ ? residual_sq_ : ops_.sum_squares(a, P);
  r.finite = std::isfinite(local_clip_ ? r.local_sq : r.sent_sq);
  if (sharded_) {
    // The payload rank by rank (each rank's pieces packed), then one reduce-scatter: this
    // rank's summed pieces, packed.
    pack_rank_major(a, pack_.data());
    comm_
        .reduce_scatter(pack_.data(), compact_.data(), shards_->counts(), DType::F32, ReduceOp::SUM)
        .wait();
    r.values = compact_.data();
  } else {
    if (a != g) ops_.memory->copy(g, a, P * sizeof(float));
    if (world_ > 1) comm_.all_reduce(g, P, DType::F32, ReduceOp::SUM).wait();
    r.values = g;
  }
  r.n = own_.size;
  r.bytes = comm_.stats().bytes_sent() - before;
  return r;
}

Scape::Reduced Scape::reduce_sparse(float* a, double local_sq) {
  const size_t K = cur_mask_.size();
  Reduced r;
  r.local_sq = local_sq;
  const int64_t before = comm_.stats().bytes_sent();
  float* c = compact_.data();
  ops_.gather(c, a, mask_dev_.data(), K);
  r.sent_sq = reading_b_ ? 0.0 : ops_.sum_squares(c, K);
  r.finite = std::isfinite(local_clip_ ? r.local_sq : r.sent_sq);
  if (sharded_) {
    for (int q = 0; q < rank_; ++q) r.offset += cur_counts_[size_t(q)];
    r.n = cur_counts_[size_t(rank_)];
    comm_.reduce_scatter(c, c + r.offset, cur_counts_, DType::F32, ReduceOp::SUM).wait();
  } else {
    r.n = K;
    if (world_ > 1) comm_.all_reduce(c, K, DType::F32, ReduceOp::SUM).wait();
  }
  r.values = c + r.offset;
  r.bytes = comm_.stats().bytes_sent() - before;
  return r;
}

// The gradient norm, and clipping of the reduced values by it (r.clip: the factor applied).
// Reading A clips by the norm of the synchronised values (all of them on a dense step); reading
// B and error_feedback "momentum" have clipped each rank's gradient already and report the root
// mean square of the ranks' local gradient norms. extra[] (telemetry sums) rides along in the same
// all-reduce.
double Scape::clip(Reduced& r, std::span<float> extra) {
  const double seg_sq = local_clip_ ? 0.0 : ops_.sum_squares(r.values, r.n);
  std::vector<float> sums = {float(local_clip_ ? r.local_sq : sharded_ ? seg_sq : 0.0)};
  sums.insert(sums.end(), extra.begin(), extra.end());
  sum_over_ranks(control_, sums);
  std::copy(sums.begin() + 1, sums.end(), extra.begin());
  if (local_clip_) return std::sqrt(double(sums[0]) / world_);
  const double norm = std::sqrt(sharded_ ? double(sums[0]) : seg_sq);
  if (cfg_.grad_clip > 0) r.clip = std::min(1.0, cfg_.grad_clip / (norm + 1e-6));
  clip_to_norm(ops_, r.values, r.n, norm, cfg_.grad_clip);
  return norm;
}

// What this rank sent leaves its residual: all of it, or all but the clipped share
// (optimizer.scape.residual_keeps_clipped). Dense steps sent everything. With momentum factor
// masking the local momentum restarts where a sparse step sent it, and everywhere after the last
// dense step before the sparse ones (so every coordinate's sum restarted at its last update).
void Scape::settle_residual(const Reduced& r, bool dense, int64_t t) {
  if (!use_residual_) return;
  const float keep = sc_.residual_keeps_clipped && r.clip < 1.0 ? float(1.0 - r.clip) : 0.0f;
  if (dense) {
    if (keep == 0.0f)
      residual_.zero();
    else
      ops_.scale(residual_.data(), keep, total_);
    if (momentum_feedback_ && sc_.momentum_factor_masking && !dense_step(t + 1)) local_m_.zero();
    return;
  }
  const size_t K = cur_mask_.size();
  ops_.scale_at(residual_.data(), mask_dev_.data(), K, keep);  // keep 0: zero
  if (momentum_feedback_ && sc_.momentum_factor_masking)       // the local momenta restart
    ops_.scale_at(local_m_.data(), mask_dev_.data(), K, 0.0f);
}

// The update-age tally from last_host_ (at construction and after loading a checkpoint).
void Scape::recount_ages() {
  const float warm = float(sc_.dense_warmup_steps);
  ages_ = {};
  for (float last : last_host_) {
    ages_.covered += last > warm ? 1.0 : 0.0;
    if (last >= 0) ages_.known += 1.0, ages_.sum_last += double(last);
  }
}

// The tally after the n owned coordinates idx[] (host) are updated at step t, and their
// last_host_ entries become t (as the update op sets last_).
void Scape::tally_update(const uint32_t* idx, size_t n, int64_t t) {
  const float warm = float(sc_.dense_warmup_steps);
  const bool after_warmup = float(t) > warm;
  float* last = last_host_.data();
  double covered = 0, known = 0, sum_last = 0;
#pragma omp parallel for schedule(static) reduction(+ : covered, known, sum_last)
  for (size_t j = 0; j < n; ++j) {
    const float before = last[idx[j]];
    covered += after_warmup && !(before > warm) ? 1.0 : 0.0;
    if (before < 0)
      known += 1.0, sum_last += double(t);
    else
      sum_last += double(t) - double(before);
  }
  ages_.covered += covered;
  ages_.known += known;
  ages_.sum_last += sum_last;
#pragma omp parallel for schedule(static)
  for (size_t j = 0; j < n; ++j) last[idx[j]] = float(t);
}

// ---- the update and the distribution of the updated values --------------------------------

void Scape::update_selected(const Reduced& r, bool dense, const StepContext& ctx) {
  // State and decay flags by local index, parameters by flat index (in the op table's memory;
  // the local indices also on the host, for the age tally).
  const uint32_t* idx = all_owned_dev_.data();
  const uint32_t* pidx = sharded_ ? own_global_dev_.data() : all_owned_dev_.data();
  tally_update(dense ? all_owned_.data() : cur_local_.data(), r.n, ctx.t);
  if (!dense) {
    pidx = mask_dev_.data() + r.offset;
    idx = sharded_ ? local_dev_.data() : mask_dev_.data();  // unsharded: local = flat
  }
  float* p = params_.data();
  const kernels::AdamStep step = {
      .lr = float(ctx.lr),
      .beta1 = float(cfg_.beta1),
      .beta2 = float(cfg_.beta2),
      .eps = float(cfg_.eps),
      .weight_decay = float(cfg_.weight_decay),
      .t = ctx.t,
      .code_form = code_form_,
      .catch_up_max = int(sc_.catch_up_max),
      // Without a residual the value carries one step's gradient, whatever the age.
      .age_normaliser = sc_.normaliser == ScapeNormaliser::SCAPE_NORMALISER_AGE && use_residual_,
      .lazy_decay = sc_.lazy_weight_decay,
      .accumulated = accumulated_kind(sc_.error_feedback),
      .momentum_restarts = sc_.momentum_factor_masking && !dense,
      .frozen_normaliser = sc_.normaliser == ScapeNormaliser::SCAPE_NORMALISER_FROZEN && !dense};
  if (reading_b_) {  // r.values: the momentum itself, exact at the selected coordinates
    ops_.adams_update_from_momentum(p, pidx, m_.data(), last_.data(), idx, r.values, decay_.data(),
                                    r.n, step);
    return;
  }
  const kernels::IndexedAdamsState<float> st = {
      .m = m_.data(),
      .last = last_.data(),
      .decay = decay_.data(),
      .den_sq = den_sq_.size() == 0 ? nullptr : den_sq_.data(),
      .dir = sc_.stale_momentum ? stale_dir_.data() : nullptr};
  ops_.adams_update_indexed(p, pidx, idx, r.values, r.n, st, step);
}

// Every replica receives the updated values; returns the bytes this rank sent for it.
int64_t Scape::distribute_params(const Reduced& r, bool dense) {
  if (!sharded_) return 0;
  const int64_t before = comm_.stats().bytes_sent();
  distribute(params_.data(), r, dense);
  if (sc_.stale_momentum) distribute(stale_dir_.data(), r, dense);
  return comm_.stats().bytes_sent() - before;
}

// The owners' values of a flat buffer at what they updated (all they own on a dense step, their
// part of the mask otherwise) to every rank.
void Scape::distribute(float* flat, const Reduced& r, bool dense) {
  if (dense) {  // this rank's pieces packed at its place, one all-gather, every piece back
    ops_.copy_runs(pack_.data(), flat, own_pack_runs_.data(), own_pack_runs_.size());
    float* mine = pack_.data() + rank_base(rank_);
    comm_.all_gather(mine, pack_.data(), shards_->counts(), DType::F32).wait();
    unpack_rank_major(pack_.data(), flat);
    return;
  }
  float* c = compact_.data();
  const uint32_t* I = mask_dev_.data();
  ops_.gather(c + r.offset, flat, I + r.offset, r.n);
  comm_.all_gather(c + r.offset, c, cur_counts_, DType::F32).wait();
  ops_.scatter(flat, c, I, cur_mask_.size());
}

// optimizer.scape.stale_momentum: every coordinate this sparse step did not select moves by
// lr times its last step. Every rank does the same arithmetic on its replica.
void Scape::apply_stale_moves(double lr, bool dense) {
  if (!sc_.stale_momentum || dense) return;
  // Every coordinate moves, then the selected ones get their value back (saved in compact_,
  // free after the distribution): p - lr d exactly where unselected, p where selected.
  const size_t K = cur_mask_.size();
  float* p = params_.data();
  ops_.gather(compact_.data(), p, mask_dev_.data(), K);
  ops_.axpy(p, -float(lr), stale_dir_.data(), total_);
  ops_.scatter(p, compact_.data(), mask_dev_.data(), K);
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
