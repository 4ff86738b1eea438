// DataParallel (see data_parallel.h): bucket launch from the backward hook, ZeRO sharding,
// bf16 packing, the non-finite agreement, clipping by the global norm, update, all-gather.
#include "optim/data_parallel.h"

#include <algorithm>
#include <cmath>
#include "core/error.h"
#include "core/log.h"
#include "optim/sync_common.h"

namespace gossamer::optim {

using comm::DType;
using comm::ReduceOp;

std::unique_ptr<Optimizer> make_data_parallel(const OptimizerSetup& setup, RuleFactory rule) {
  return std::make_unique<DataParallel>(setup, rule);
}

DataParallel::DataParallel(const OptimizerSetup& setup, RuleFactory make_rule)
    : ShardedOptimizer(setup, /*sharded=*/setup.parallel.zero_stage > 0),
      par_(setup.parallel),
      bf16_(setup.parallel.comm_dtype == CommDtype::COMM_DTYPE_BF16) {
  rule_ = make_rule(cfg_, setup.layout, ops_, own_);
  if (bf16_ && world_ > 1) wire_ = Buffer<uint16_t>(total_, *ops_.memory);
  if (par_.zero_stage == 2) {
    grad_acc_ = Buffer<float>(own_.size, *ops_.memory);
    acc_in_runs_ = piece_runs(own_.pieces, PieceMove::TO_PACKED, *ops_.memory);
    acc_out_runs_ = piece_runs(own_.pieces, PieceMove::FROM_PACKED, *ops_.memory);
  }
  bucket_sq_ = LaunchedSums(shards_->num_buckets(), *ops_.memory);
}

DataParallel::~DataParallel() {
  // Never leave a collective in flight that refers to our buffers.
  for (comm::Work& w : pending_) {
    try {
      w.wait();
    } catch (...) {
    }
  }
}

void DataParallel::micro_batch_begin(int index, int count) {
  GOSSAMER_CHECK(attached(), "%s: micro-batch before attach()", name());
  GOSSAMER_CHECK(pending_.empty() && next_bucket_ == 0,
                 "data-parallel: micro-batch %d of %d "
                 "started while the previous one is still communicating",
                 index, count);
  communicating_ = par_.zero_stage == 2 || index == count - 1;
  ready_ = 0;
}

void DataParallel::grads_ready(size_t begin, size_t end) {
  ready_ = std::max(ready_, end);
  if (!communicating_ || !par_.overlap) return;
  while (next_bucket_ < shards_->num_buckets() && shards_->bucket_end(next_bucket_) <= ready_)
    launch(next_bucket_++);
}

void DataParallel::launch(size_t index) {
  const size_t begin = shards_->bucket_begin(index), n = shards_->bucket_end(index) - begin;
  float* g = grads_.data() + begin;
  // Its local sum of squares, taken before it is reduced and left in the table's memory: on a
  // GPU nothing waits here, so backward goes on while the bucket travels. Read once per step.
  ops_.sum_squares_to(bucket_sq_.slot(index), g, n);
  if (world_ == 1) return;
  void* payload = g;
  if (bf16_) {
    uint16_t* w = wire_.data() + begin;
    ops_.to_bf16(w, g, n);
    payload = w;
  }
  const DType dt = bf16_ ? DType::BF16 : DType::F32;
  const size_t esize = bf16_ ? 2 : 4;
  if (par_.zero_stage == 0) {
    pending_.push_back(comm_.all_reduce(payload, n, dt, ReduceOp::SUM));
  } else {
    // This rank's part of the bucket sits at its own offset inside the bucket: in place.
    const size_t offset = shards_->piece(rank_, index).begin - begin;
    void* out = static_cast<char*>(payload) + offset * esize;
    pending_.push_back(
        comm_.reduce_scatter(payload, out, shards_->bucket_counts(index), dt, ReduceOp::SUM));
  }
  pending_bucket_.push_back(index);
}

void DataParallel::launch_remaining() {
  while (next_bucket_ < shards_->num_buckets()) launch(next_bucket_++);
}

void DataParallel::tally_checked_buckets() {
  bucket_sq_.tally(shards_->num_buckets(), &local_sumsq_, &local_bad_);  // launched in order
}

void DataParallel::finish_all() {
  for (size_t k = 0; k < pending_.size(); ++k) {
    pending_[k].wait();
    if (!bf16_) continue;
    const size_t b = pending_bucket_[k];
    // Unpack what this rank uses: the whole bucket (replicated) or its own part.
    const ShardPiece mine = shards_->piece(rank_, b);
    const size_t s = par_.zero_stage == 0 ? shards_->bucket_begin(b) : mine.begin;
    const size_t e = par_.zero_stage == 0 ? shards_->bucket_end(b) : mine.end;
    ops_.from_bf16(grads_.data() + s, wire_.data() + s, e - s);
  }
  pending_.clear();
  pending_bucket_.clear();
}

void DataParallel::micro_batch_end(int index, int count) {
  if (!communicating_) return;
  GOSSAMER_CHECK(ready_ == total_, "data-parallel: backward reported gradients up to %zu of %zu",
                 ready_, total_);
  launch_remaining();
  if (index == count - 1) return;  // the last micro-batch is finished by step()
  // ZeRO-2, not the last micro-batch: keep this rank's reduced pieces, free the rest.
  tally_checked_buckets();  // its flags; its sums are not the step's norm
  finish_all();
  ops_.accumulate_runs(grad_acc_.data(), grads_.data(), acc_in_runs_.data(), acc_in_runs_.size());
  ops_.memory->zero(grads_.data(), grads_.size_bytes());
  next_bucket_ = 0;
  local_sumsq_ = 0;
}

StepResult DataParallel::step(const StepContext& ctx) {
  GOSSAMER_CHECK(attached(), "%s: step before attach()", name());
  launch_remaining();  // everything, when the caller skipped the micro-batch protocol
  tally_checked_buckets();
  finish_all();
  next_bucket_ = 0;
  agree_gradients_finite(control_, !local_bad_, ctx.t);
  local_bad_ = false;

  float* grads = grads_.data();
  if (par_.zero_stage == 2 && grad_acc_.size() > 0) {
    ops_.accumulate_runs(grads, grad_acc_.data(), acc_out_runs_.data(), acc_out_runs_.size());
    grad_acc_.zero();
  }
  // One process, gradients unchanged since the check: its sums are the norm (one pass saved).
  double sumsq =
      world_ == 1 && par_.zero_stage < 2 ? local_sumsq_ : sum_squares_owned(ops_, grads, own_);
  local_sumsq_ = 0;
  if (par_.zero_stage > 0 && world_ > 1) {  // each rank holds a shard of the gradient
    float s = float(sumsq);
    sum_over_ranks(control_, {&s, 1});
    sumsq = s;
  }
  StepResult result;
  result.grad_norm = std::sqrt(sumsq);
  clip_owned_to_norm(ops_, grads, own_, result.grad_norm, cfg_.grad_clip);
  rule_->update(params_.data(), grads, ctx);
  if (par_.zero_stage > 0) all_gather_shards(comm_, params_, *shards_, rank_);
  communicating_ = false;
  ready_ = 0;
  return result;
}

}  // namespace gossamer::optim
