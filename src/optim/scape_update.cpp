// SCAPE's payload and update (see scape.h): the residual or local momentum packed at the mask,
// reduced densely or sparsely, clipped, AdamS on the selected owned coordinates, and the
// updated values distributed to every replica.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/timer.h"
#include "optim/scape.h"
#include "optim/sync_common.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

using comm::DType;
using comm::ReduceOp;

namespace {

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

}  // namespace gossamer::optim
