// SCAPE's mask (see scape.h): scoring the owned coordinates, selecting the next mask, and its
// exchange (launched at the end of a step, finished at the start of the next, one step late).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "optim/scape.h"
#include "optim/scape_detail.h"
#include "optim/selection_report.h"

namespace gossamer::optim {

using comm::DType;
using comm::ReduceOp;
using scape_detail::global_to_local;
using scape_detail::local_to_global;
using scape_detail::reserve;

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

}  // namespace gossamer::optim
