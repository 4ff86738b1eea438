// SCAPE (see scape.h): dense/sparse step, compact reduce-scatter, masked AdamS, sparse
// parameter all-gather, next mask selection and its asynchronous exchange.
#include "optim/scape.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/timer.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

using comm::DType;
using comm::ReduceOp;

Scape::Scape(const OptimizerConfig& config, const ParallelConfig& parallel,
             const model::ParamLayout& layout, const kernels::OpTable& ops,
             comm::Communicator& comm)
    : cfg_(config),
      par_(parallel),
      ops_(ops),
      comm_(comm),
      world_(comm.size()),
      rank_(comm.rank()),
      total_(layout.total()),
      sharded_(parallel.zero_stage >= 1 && comm.size() > 1),
      code_form_(config.adams_form == "code"),
      density_(1.0 - config.sparsity),
      reading_b_(config.scape_reading == "B"),
      use_residual_(!reading_b_ && config.residual),
      shards_(layout.total(), comm.size()) {
  GOSSAMER_CHECK(parallel.zero_stage <= 1,
                 "parallel.zero_stage: scape shards like ZeRO-1 (1) or keeps its momentum "
                 "replicated (0); found %d",
                 parallel.zero_stage);
  GOSSAMER_CHECK(total_ < (size_t(1) << 32), "scape: %zu parameters exceed 32-bit mask indices",
                 total_);
  lo_ = sharded_ ? shards_.begin(rank_) : 0;
  hi_ = sharded_ ? shards_.end(rank_) : total_;
  const size_t owned = hi_ - lo_;
  m_ = HostBuffer<float>(owned);
  if (use_residual_) residual_ = HostBuffer<float>(total_);
  if (reading_b_) {
    GOSSAMER_CHECK(sharded_ || world_ == 1,
                   "optimizer.scape_reading: \"B\" needs parallel.zero_stage 1 at world size > 1 "
                   "(each owner scores its mask from its own local momentum)");
    local_m_ = HostBuffer<float>(total_);
    last_.assign(owned, 0.0f);
  }
  decay_.assign(owned, 0);
  for (const DecayRun& r : decay_runs(layout, lo_, hi_))
    if (r.decay)
      std::fill(decay_.begin() + ptrdiff_t(r.begin), decay_.begin() + ptrdiff_t(r.end), 1);
  all_owned_.resize(owned);
  for (size_t i = 0; i < owned; ++i) all_owned_[i] = uint32_t(i);
  mask_flags_.assign(owned, 0.0f);
  cur_counts_.assign(size_t(world_), 0);
}

Scape::~Scape() {
  try {
    if (mask_in_flight_) mask_work_.wait();
  } catch (...) {
  }
}

size_t Scape::k_of(int rank) const {
  const size_t n = sharded_ ? shards_.size(rank) : total_;
  return std::min(n, size_t(std::ceil(density_ * double(n))));
}

bool Scape::dense_step(int64_t t) const {
  return density_ >= 1.0 || t <= cfg_.dense_warmup_steps ||
         (cfg_.dense_refresh_every > 0 && t % cfg_.dense_refresh_every == 0);
}

void Scape::micro_batch_begin(int index, int count, std::span<float> grads) {
  if (index == 0 && relaunch_after_load_) {
    relaunch_after_load_ = false;
    launch_mask_exchange(MaskEncoding::BITMAP);  // counts of a loaded mask are not known
  }
}

void Scape::launch_mask_exchange(MaskEncoding encoding) {
  if (!sharded_) {  // every rank selected the same full mask: nothing to exchange
    mask_ready_ = true;
    return;
  }
  wire_encoding_ = encoding;
  wire_counts_.assign(size_t(world_), 0);
  size_t recv_total = 0;
  for (int q = 0; q < world_; ++q) {
    const size_t n = shards_.size(q);
    wire_counts_[size_t(q)] = mask_bytes(encoding, k_of(q), n);
    recv_total += wire_counts_[size_t(q)];
  }
  const size_t owned = hi_ - lo_;
  wire_send_.resize(wire_counts_[size_t(rank_)]);
  if (encoding == MaskEncoding::INDICES) {
    GOSSAMER_CHECK(next_own_.size() == k_of(rank_), "scape: mask shard of %zu, expected %zu",
                   next_own_.size(), k_of(rank_));
    std::memcpy(wire_send_.data(), next_own_.data(), next_own_.size() * sizeof(uint32_t));
  } else {
    encode_bitmap(next_own_, owned, wire_send_.data());
  }
  wire_recv_.resize(recv_total);
  const int64_t before = comm_.stats().bytes_sent();
  mask_work_ = comm_.all_gather(wire_send_.data(), wire_recv_.data(), wire_counts_, DType::U8);
  mask_issue_bytes_ = double(comm_.stats().bytes_sent() - before);
  mask_in_flight_ = true;
}

void Scape::finish_mask_exchange() {
  cur_mask_.clear();
  if (!sharded_) {
    cur_mask_ = next_own_;  // slice-local == global
    cur_counts_.assign(size_t(world_), 0);
    cur_counts_[0] = cur_mask_.size();
    mask_ready_ = false;
    return;
  }
  GOSSAMER_CHECK(mask_in_flight_, "scape: no mask exchange in flight");
  mask_work_.wait();
  mask_in_flight_ = false;
  size_t offset = 0;
  for (int q = 0; q < world_; ++q) {
    const size_t before = cur_mask_.size();
    const uint32_t base = uint32_t(shards_.begin(q));
    const uint8_t* seg = wire_recv_.data() + offset;
    if (wire_encoding_ == MaskEncoding::INDICES) {
      const size_t k = wire_counts_[size_t(q)] / sizeof(uint32_t);
      for (size_t j = 0; j < k; ++j) {
        uint32_t v;
        std::memcpy(&v, seg + j * sizeof(uint32_t), sizeof v);
        cur_mask_.push_back(base + v);
      }
    } else {
      decode_bitmap(seg, shards_.size(q), base, cur_mask_);
    }
    cur_counts_[size_t(q)] = cur_mask_.size() - before;
    offset += wire_counts_[size_t(q)];
  }
}

void Scape::select_next_mask(const float* scores) {
  next_own_ = top_k_indices({scores, hi_ - lo_}, k_of(rank_));
  MaskEncoding enc = MaskEncoding::INDICES;
  if (cfg_.mask_encoding == "bitmap") {
    enc = MaskEncoding::BITMAP;
  } else if (cfg_.mask_encoding == "auto") {
    // Decided from every rank's sizes, so all ranks agree.
    size_t idx_bytes = 0, bit_bytes = 0;
    for (int q = 0; q < world_; ++q) {
      const size_t n = sharded_ ? shards_.size(q) : total_;
      idx_bytes += mask_bytes(MaskEncoding::INDICES, k_of(q), n);
      bit_bytes += mask_bytes(MaskEncoding::BITMAP, k_of(q), n);
    }
    enc = bit_bytes < idx_bytes ? MaskEncoding::BITMAP : MaskEncoding::INDICES;
  }
  launch_mask_exchange(enc);
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
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < P; ++i) u[i] = b1 * u[i] + w * g[i];
  return u;
}

StepResult Scape::step(std::span<float> params, std::span<float> grads, const StepContext& ctx) {
  GOSSAMER_CHECK(params.size() == total_ && grads.size() == total_,
                 "scape: buffer sizes differ from the layout");
  metrics_.clear();
  const comm::CommStats before = comm_.stats();
  const int64_t t = ctx.t;
  if (relaunch_after_load_) {  // the caller skipped micro_batch_begin
    relaunch_after_load_ = false;
    launch_mask_exchange(MaskEncoding::BITMAP);
  }
  const bool have_mask = mask_in_flight_ || mask_ready_;
  const bool dense = dense_step(t) || !have_mask;
  double mask_wait_s = 0, mask_exchange_s = std::nan("");
  if (have_mask) {
    Stopwatch w;
    finish_mask_exchange();
    mask_wait_s = w.seconds();
    if (sharded_) mask_exchange_s = mask_work_.duration();
    mask_ready_ = false;
  }
  if (dense) cur_mask_.clear();

  const size_t P = total_, owned = hi_ - lo_;
  float* g = grads.data();
  // What is sent, at the mask: a = g + e_r (reading A, in the residual buffer), g (A without
  // residual) or the local momentum u_r = beta1 u_r + (1 - beta1) g (reading B).
  float* A = use_residual_ ? residual_.data() : g;
  if (use_residual_) ops_.accumulate(A, g, P);
  double local_sq = 0;  // reading B: this rank's squared gradient norm (unscaled by the ranks)
  const bool next_sparse = !dense_step(t + 1);
  std::vector<float> scores;
  if (next_sparse && cfg_.mask_score == "gradient") {  // the owner's residual-corrected gradient
    scores.resize(owned);
    for (size_t i = 0; i < owned; ++i) scores[i] = std::fabs(A[lo_ + i]);
  }
  if (reading_b_) A = accumulate_local_momentum(g, &local_sq);

  // Pack what is sent, reduce it, and keep what was not sent.
  float* ghat = nullptr;  // this rank's averaged values, one per selected owned coordinate
  size_t n_seg = 0, own_offset = 0;
  bool bad = false;
  const int64_t before_grads = comm_.stats().bytes_sent();
  if (dense) {
    bad = !std::isfinite(reading_b_ ? local_sq : ops_.sum_squares(A, P));
    if (sharded_) {
      ghat = g + lo_;  // out of place when A is the residual; in place when A == g
      comm_.reduce_scatter(A, ghat, shards_.counts(), DType::F32, ReduceOp::SUM).wait();
    } else {
      if (A != g) std::memcpy(g, A, P * sizeof(float));
      if (world_ > 1) comm_.all_reduce(g, P, DType::F32, ReduceOp::SUM).wait();
      ghat = g;
    }
    n_seg = owned;
    if (use_residual_) std::fill(A, A + P, 0.0f);
  } else {
    const size_t K = cur_mask_.size();
    compact_.resize(K);
    float* c = compact_.data();
    const uint32_t* I = cur_mask_.data();
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < K; ++j) c[j] = A[I[j]];
    bad = !std::isfinite(reading_b_ ? local_sq : ops_.sum_squares(c, K));
    if (use_residual_) {
#pragma omp parallel for schedule(static)
      for (size_t j = 0; j < K; ++j) A[I[j]] = 0.0f;
    }
    if (sharded_) {
      for (int q = 0; q < rank_; ++q) own_offset += cur_counts_[size_t(q)];
      n_seg = cur_counts_[size_t(rank_)];
      comm_.reduce_scatter(c, c + own_offset, cur_counts_, DType::F32, ReduceOp::SUM).wait();
    } else {
      n_seg = K;
      if (world_ > 1) comm_.all_reduce(c, K, DType::F32, ReduceOp::SUM).wait();
    }
    ghat = c + own_offset;
  }
  const int64_t grad_bytes = comm_.stats().bytes_sent() - before_grads;

  // Every rank stops together when one sent non-finite values.
  int32_t flag = bad ? int32_t(world_ - rank_) : 0;
  if (world_ > 1) comm_.all_reduce(&flag, 1, DType::I32, ReduceOp::MAX).wait();
  if (flag != 0)
    throw CollectiveError(
        strprintf("step %lld: non-finite (NaN/Inf) gradients on rank %d, found before they were "
                  "communicated; stopping without updating (the last checkpoint is intact)",
                  (long long)t, world_ - flag));

  // Reading A clips by the norm of the synchronised values (all of them on a dense step);
  // reading B has clipped each rank's gradient already and reports the root mean square of the
  // ranks' local gradient norms.
  const double seg_sq = reading_b_ ? 0.0 : ops_.sum_squares(ghat, n_seg);
  float sums[2] = {float(reading_b_ ? local_sq
                         : sharded_ ? seg_sq
                                    : 0.0),
                   use_residual_ ? float(ops_.sum_squares(A, P)) : 0.0f};
  if (world_ > 1) comm_.all_reduce(sums, 2, DType::F32, ReduceOp::SUM).wait();
  StepResult result;
  if (reading_b_) {
    result.grad_norm = std::sqrt(double(sums[0]) / world_);
  } else {
    result.grad_norm = std::sqrt(sharded_ ? double(sums[0]) : seg_sq);
    if (cfg_.grad_clip > 0) {
      const double coef = cfg_.grad_clip / (result.grad_norm + 1e-6);
      if (coef < 1.0) ops_.scale(ghat, float(coef), n_seg);
    }
  }

  // AdamS on the selected owned coordinates.
  std::vector<uint32_t> local;
  const uint32_t* idx = all_owned_.data();
  if (!dense) {
    local.resize(n_seg);
    for (size_t j = 0; j < n_seg; ++j) local[j] = cur_mask_[own_offset + j] - uint32_t(lo_);
    idx = local.data();
  }
  if (reading_b_) {  // ghat: the momentum itself, exact at the selected coordinates
    ops_.adams_update_from_momentum(params.data() + lo_, m_.data(), last_.data(), idx, ghat,
                                    decay_.data(), n_seg,
                                    {.lr = float(ctx.lr),
                                     .beta1 = float(cfg_.beta1),
                                     .beta2 = float(cfg_.beta2),
                                     .eps = float(cfg_.eps),
                                     .weight_decay = float(cfg_.weight_decay),
                                     .t = t,
                                     .code_form = code_form_,
                                     .catch_up_max = int(cfg_.catch_up_max)});
  } else {
    ops_.adams_update_indexed(params.data() + lo_, m_.data(), idx, ghat, decay_.data(), n_seg,
                              {.lr = float(ctx.lr),
                               .beta1 = float(cfg_.beta1),
                               .beta2 = float(cfg_.beta2),
                               .eps = float(cfg_.eps),
                               .weight_decay = float(cfg_.weight_decay),
                               .t = t,
                               .code_form = code_form_});
  }

  // Every replica receives the updated values.
  const int64_t before_params = comm_.stats().bytes_sent();
  if (sharded_) {
    if (dense) {
      comm_.all_gather(params.data() + lo_, params.data(), shards_.counts(), DType::F32).wait();
    } else {
      float* c = compact_.data();
      const uint32_t* I = cur_mask_.data();
      float* p = params.data();
      for (size_t j = 0; j < n_seg; ++j) c[own_offset + j] = p[I[own_offset + j]];
      comm_.all_gather(c + own_offset, c, cur_counts_, DType::F32).wait();
      const size_t K = cur_mask_.size();
#pragma omp parallel for schedule(static)
      for (size_t j = 0; j < K; ++j) p[I[j]] = c[j];
    }
  }
  const int64_t param_bytes = comm_.stats().bytes_sent() - before_params;

  // The mask of step t+1, from m after this update; its exchange overlaps step t+1's compute.
  mask_issue_bytes_ = 0;
  if (next_sparse) {
    if (cfg_.mask_score == "momentum") {
      scores.resize(owned);
      const float* mm = reading_b_ ? local_m_.data() + lo_ : m_.data();
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < owned; ++i) scores[i] = std::fabs(mm[i]);
    } else if (cfg_.mask_score == "momentum_residual") {
      // The momentum the coordinate would have if its pending residual were applied now; the
      // owner's own residual, times the ranks, estimates the sum over ranks.
      GOSSAMER_CHECK(use_residual_, "optimizer.mask_score: momentum_residual needs residual");
      scores.resize(owned);
      const float* mm = m_.data();
      const float* e = residual_.data() + lo_;
      const float b1 = float(cfg_.beta1), n = float(world_);
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < owned; ++i) scores[i] = std::fabs(b1 * mm[i] + (1 - b1) * n * e[i]);
    }
    select_next_mask(scores.data());
  } else {
    next_own_.clear();
  }

  double jac = std::nan("");
  if (!dense) {
    if (!prev_mask_.empty()) jac = jaccard(cur_mask_, prev_mask_);
    prev_mask_ = cur_mask_;
  }
  const comm::CommStats delta = comm_.stats().since(before);
  metrics_ = {
      {"dense", dense ? 1.0 : 0.0},
      {"selected", double(dense ? P : cur_mask_.size())},
      {"grad_bytes", double(grad_bytes)},
      {"param_bytes", double(param_bytes)},
      {"critical_bytes", double(delta.bytes_sent()) - mask_issue_bytes_},
      {"mask_bytes", mask_issue_bytes_},
      {"mask_wait_s", mask_wait_s},
  };
  if (use_residual_) metrics_.push_back({"residual_norm", std::sqrt(double(sums[1]))});
  if (!std::isnan(jac)) metrics_.push_back({"mask_jaccard", jac});
  if (!std::isnan(mask_exchange_s)) metrics_.push_back({"mask_exchange_s", mask_exchange_s});
  return result;
}

std::vector<StateTensor> Scape::state() {
  const size_t owned = hi_ - lo_;
  std::fill(mask_flags_.begin(), mask_flags_.end(), 0.0f);
  for (uint32_t i : next_own_) mask_flags_[i] = 1.0f;
  has_mask_ = next_own_.empty() ? 0.0f : 1.0f;
  std::vector<StateTensor> s = {{"scape.m", m_.data(), owned, lo_, total_},
                                {"scape.next_mask", mask_flags_.data(), owned, lo_, total_},
                                {"scape.has_next_mask", &has_mask_, 1, 0, 1}};
  if (use_residual_)
    s.push_back({"scape.residual", residual_.data(), total_, size_t(rank_) * total_,
                 size_t(world_) * total_, total_});
  if (reading_b_) {  // the ranks' local momenta matter only through their sum
    s.push_back({"scape.local_momentum", local_m_.data(), total_, size_t(rank_) * total_,
                 size_t(world_) * total_, total_});
    s.push_back({"scape.last_update", last_.data(), owned, lo_, total_});
  }
  return s;
}

void Scape::state_loaded() {
  next_own_.clear();
  for (size_t i = 0; i < mask_flags_.size(); ++i)
    if (mask_flags_[i] != 0.0f) next_own_.push_back(uint32_t(i));
  prev_mask_.clear();
  mask_in_flight_ = mask_ready_ = relaunch_after_load_ = false;
  if (has_mask_ != 0.0f) {
    if (sharded_)
      relaunch_after_load_ = true;
    else
      mask_ready_ = true;
  }
}

size_t Scape::state_bytes() const {
  return (m_.size() + residual_.size() + local_m_.size() + last_.size()) * sizeof(float);
}

}  // namespace gossamer::optim
