// DataParallel (see data_parallel.h): bucket launch from the backward hook, ZeRO sharding,
// bf16 packing, the non-finite agreement, clipping by the global norm, update, all-gather.
#include "optim/data_parallel.h"

#include <algorithm>
#include <cmath>

#include "comm/bf16.h"
#include "core/error.h"
#include "core/log.h"

namespace gossamer::optim {

using comm::DType;
using comm::ReduceOp;

DataParallel::DataParallel(
    const OptimizerConfig& config, const ParallelConfig& parallel, const model::ParamLayout& layout,
    const kernels::OpTable& ops, comm::Communicator& comm,
    const std::function<std::unique_ptr<UpdateRule>(size_t, size_t)>& make_rule)
    : cfg_(config),
      par_(parallel),
      ops_(ops),
      comm_(comm),
      world_(comm.size()),
      rank_(comm.rank()),
      total_(layout.total()),
      bf16_(parallel.comm_dtype == "bf16"),
      shards_(layout.total(), comm.size()) {
  parallel.validate();
  const bool zero = par_.zero_stage > 0;
  lo_ = zero ? shards_.begin(rank_) : 0;
  hi_ = zero ? shards_.end(rank_) : total_;
  const size_t bucket = std::max<size_t>(1, size_t(par_.bucket_mb * 1e6 / sizeof(float)));
  for (size_t a = 0; a < total_; a += bucket) {
    Bucket b{a, std::min(total_, a + bucket), {}};
    for (int r = 0; r < world_; ++r) b.counts.push_back(shards_.overlap(r, b.begin, b.end));
    buckets_.push_back(std::move(b));
  }
  rule_ = make_rule(lo_, hi_);
  if (bf16_ && world_ > 1) wire_ = HostBuffer<uint16_t>(total_);
  if (par_.zero_stage == 2) grad_acc_ = HostBuffer<float>(hi_ - lo_);
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

void DataParallel::micro_batch_begin(int index, int count, std::span<float> grads) {
  GOSSAMER_CHECK(pending_.empty() && next_bucket_ == 0,
                 "data-parallel: micro-batch %d of %d "
                 "started while the previous one is still communicating",
                 index, count);
  GOSSAMER_CHECK(grads.size() == total_, "%s: gradient buffer of %zu elements, layout %zu", name(),
                 grads.size(), total_);
  grads_ = grads.data();
  communicating_ = par_.zero_stage == 2 || index == count - 1;
  ready_ = 0;
}

void DataParallel::grads_ready(size_t begin, size_t end) {
  ready_ = std::max(ready_, end);
  if (!communicating_ || !par_.overlap || grads_ == nullptr) return;
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].end <= ready_)
    launch(next_bucket_++);
}

void DataParallel::launch(size_t index) {
  const Bucket& b = buckets_[index];
  float* g = grads_ + b.begin;
  const size_t n = b.end - b.begin;
  // Checked before anything leaves this rank.
  const double sumsq = ops_.sum_squares(g, n);
  local_sumsq_ += sumsq;
  if (!std::isfinite(sumsq)) local_bad_ = true;
  if (world_ == 1) return;
  void* payload = g;
  if (bf16_) {
    uint16_t* w = wire_.data() + b.begin;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) w[i] = comm::float_to_bf16(g[i]);
    payload = w;
  }
  const DType dt = bf16_ ? DType::BF16 : DType::F32;
  const size_t esize = bf16_ ? 2 : 4;
  if (par_.zero_stage == 0) {
    pending_.push_back(comm_.all_reduce(payload, n, dt, ReduceOp::SUM));
  } else {
    // This rank's part of the bucket sits at its own offset inside the bucket: in place.
    size_t offset = 0;
    for (int r = 0; r < rank_; ++r) offset += b.counts[r];
    void* out = static_cast<char*>(payload) + offset * esize;
    pending_.push_back(comm_.reduce_scatter(payload, out, b.counts, dt, ReduceOp::SUM));
  }
  pending_bucket_.push_back(index);
}

void DataParallel::launch_remaining() {
  while (next_bucket_ < buckets_.size()) launch(next_bucket_++);
}

void DataParallel::finish_all() {
  for (size_t k = 0; k < pending_.size(); ++k) {
    pending_[k].wait();
    if (!bf16_) continue;
    const Bucket& b = buckets_[pending_bucket_[k]];
    // Unpack what this rank uses: the whole bucket (replicated) or its own part.
    const size_t s = par_.zero_stage == 0 ? b.begin : std::max(b.begin, lo_);
    const size_t e = par_.zero_stage == 0 ? b.end : std::min(b.end, hi_);
    const uint16_t* w = wire_.data();
    float* g = grads_;
#pragma omp parallel for schedule(static)
    for (size_t i = s; i < e; ++i) g[i] = comm::bf16_to_float(w[i]);
  }
  pending_.clear();
  pending_bucket_.clear();
}

void DataParallel::micro_batch_end(int index, int count) {
  if (!communicating_ || grads_ == nullptr) return;
  GOSSAMER_CHECK(ready_ == total_, "data-parallel: backward reported gradients up to %zu of %zu",
                 ready_, total_);
  launch_remaining();
  if (index == count - 1) return;  // the last micro-batch is finished by step()
  // ZeRO-2, not the last micro-batch: keep this rank's reduced shard, free the rest.
  finish_all();
  float* g = grads_ + lo_;
  float* acc = grad_acc_.data();
  const size_t n = hi_ - lo_;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) acc[i] += g[i];
  std::fill(grads_, grads_ + total_, 0.0f);
  next_bucket_ = 0;
  local_sumsq_ = 0;
}

void DataParallel::check_agreement(int64_t t) {
  int32_t flag = local_bad_ ? int32_t(world_ - rank_) : 0;  // max -> lowest failing rank
  if (world_ > 1) comm_.all_reduce(&flag, 1, DType::I32, ReduceOp::MAX).wait();
  local_bad_ = false;
  if (flag != 0)
    throw CollectiveError(
        strprintf("step %lld: non-finite (NaN/Inf) gradients on rank %d, found before they were "
                  "communicated; stopping without updating (the last checkpoint is intact)",
                  (long long)t, world_ - flag));
}

StepResult DataParallel::step(std::span<float> params, std::span<float> grads,
                              const StepContext& ctx) {
  GOSSAMER_CHECK(params.size() == total_ && grads.size() == total_,
                 "%s: buffer sizes differ from the layout", name());
  if (grads_ != grads.data()) {
    // First step, or a caller that skipped the micro-batch protocol: communicate everything now.
    GOSSAMER_CHECK(pending_.empty(), "data-parallel: the gradient buffer moved mid-step");
    grads_ = grads.data();
    next_bucket_ = 0;
  }
  launch_remaining();
  finish_all();
  next_bucket_ = 0;
  check_agreement(ctx.t);

  float* g = grads_ + lo_;
  const size_t n = hi_ - lo_;
  if (par_.zero_stage == 2 && grad_acc_.size() > 0) {
    float* acc = grad_acc_.data();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) g[i] += acc[i], acc[i] = 0.0f;
  }
  // One process, gradients unchanged since the check: its sums are the norm (one pass saved).
  double sumsq = world_ == 1 && par_.zero_stage < 2 ? local_sumsq_ : ops_.sum_squares(g, n);
  local_sumsq_ = 0;
  if (par_.zero_stage > 0 && world_ > 1) {
    float s = float(sumsq);
    comm_.all_reduce(&s, 1, DType::F32, ReduceOp::SUM).wait();
    sumsq = s;
  }
  StepResult result;
  result.grad_norm = std::sqrt(sumsq);
  if (cfg_.grad_clip > 0) {
    const double coef = cfg_.grad_clip / (result.grad_norm + 1e-6);
    if (coef < 1.0) ops_.scale(g, float(coef), n);
  }
  rule_->update(params.data() + lo_, g, ctx);
  if (par_.zero_stage > 0 && world_ > 1)
    comm_.all_gather(params.data() + lo_, params.data(), shards_.counts(), DType::F32).wait();
  communicating_ = false;
  ready_ = 0;
  return result;
}

void ParallelConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(backend == "auto" || backend == "mpi" || backend == "nccl" || backend == "single",
                 "%sbackend: must be \"auto\", \"mpi\", \"nccl\" or \"single\", found \"%s\"",
                 p.c_str(), backend.c_str());
  GOSSAMER_CHECK(zero_stage >= 0 && zero_stage <= 2, "%szero_stage: must be 0, 1 or 2, found %d",
                 p.c_str(), zero_stage);
  GOSSAMER_CHECK(comm_dtype == "fp32" || comm_dtype == "bf16",
                 "%scomm_dtype: must be \"fp32\" or \"bf16\", found \"%s\"", p.c_str(),
                 comm_dtype.c_str());
  GOSSAMER_CHECK(bucket_mb > 0, "%sbucket_mb: must be > 0, found %g", p.c_str(), bucket_mb);
  GOSSAMER_CHECK(check_replicas_every >= 0, "%scheck_replicas_every: must be >= 0, found %lld",
                 p.c_str(), (long long)check_replicas_every);
  GOSSAMER_CHECK(timeout_s >= 0, "%stimeout_s: must be >= 0, found %g", p.c_str(), timeout_s);
}

}  // namespace gossamer::optim
