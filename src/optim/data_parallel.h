// DataParallel: a dense update rule (AdamW, ...) synchronised over a communicator in one of
// three modes (parallel.zero_stage):
//   0 replicated: gradients are all-reduced in buckets; every rank updates every parameter.
//   1 ZeRO-1: gradients are reduce-scattered in buckets; rank r owns a 1/N slice of every
//     bucket (ShardLayout, as in Megatron's distributed optimizer), keeps optimizer state for
//     its slices only (packed), updates them, and the parameters are all-gathered per bucket.
//   2 ZeRO-2: as 1, and with gradient accumulation the gradients are reduce-scattered after
//     every micro-batch, each rank accumulating only its slices.
// Buckets are fixed ranges of parallel.bucket_mb of the flat gradient buffer, in buffer
// (= backward) order; a bucket's collective starts from the model's "gradients ready" hook as
// soon as backward has finished it (parallel.overlap), so communication overlaps backward.
// Every bucket's reduce-scatter and all-gather send the same amount to every rank (within one
// element).
// Every bucket's local gradients are checked for NaN/Inf before they are sent; the ranks then
// agree (one small all-reduce) and all throw naming the lowest failing rank.
// Invariant: after step(), the parameters are bit-identical on every rank (each coordinate is
// updated by exactly one rank, or by all ranks from identical inputs, then distributed).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/buffer.h"
#include "kernels/copy_run.h"
#include "optim/optimizer.h"
#include "optim/shard_layout.h"
#include "optim/sharded_optimizer.h"
#include "optim/sync_common.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

using RuleFactory = std::unique_ptr<UpdateRule> (*)(const OptimizerConfig& config,
                                                    const model::ParamLayout& layout,
                                                    const kernels::OpTable& ops,
                                                    const OwnedShard& own);

// The registry's factory for a dense method: `rule` on what this rank updates.
std::unique_ptr<Optimizer> make_data_parallel(const OptimizerSetup& setup, RuleFactory rule);

class DataParallel final : public ShardedOptimizer {
 public:
  DataParallel(const OptimizerSetup& setup, RuleFactory make_rule);
  ~DataParallel() override;

  const char* name() const override { return rule_->name(); }
  // Every loop goes through ops; at several ranks the communicator must take device buffers
  // (NCCL), which the trainer checks.
  bool supports_device_memory() const override { return true; }
  Replicas replicas() const override { return Replicas::REPLICAS_IDENTICAL_EVERY_STEP; }
  double gradient_scale() const override { return 1.0 / world_; }
  void micro_batch_begin(int index, int count) override;
  void grads_ready(size_t begin, size_t end) override;
  void micro_batch_end(int index, int count) override;
  StepResult step(const StepContext& ctx) override;
  std::vector<StateTensor> state() override { return rule_->state(); }
  size_t state_bytes() const override { return rule_->state_bytes(); }

  // What this rank updates (everything when replicated).
  const OwnedShard& owned_shard() const { return own_; }
  size_t num_buckets() const { return shards_->num_buckets(); }

 private:
  void launch(size_t b);
  void launch_remaining();
  void finish_all();             // waits for launched buckets; unpacks bf16
  void tally_checked_buckets();  // every bucket's sum of squares into local_sumsq_, local_bad_

  ParallelConfig par_;
  bool bf16_;
  std::unique_ptr<UpdateRule> rule_;
  Buffer<uint16_t> wire_;   // bf16 staging, flat layout (op memory)
  Buffer<float> grad_acc_;  // ZeRO-2: this rank's accumulated pieces, packed (op memory)
  Buffer<kernels::CopyRun> acc_in_runs_, acc_out_runs_;  // ZeRO-2: flat -> packed, and back
  LaunchedSums bucket_sq_;                               // per bucket: its local sum of squares
  // Per micro-batch state.
  bool communicating_ = false;
  size_t ready_ = 0, next_bucket_ = 0;
  std::vector<comm::Work> pending_;
  std::vector<size_t> pending_bucket_;
  bool local_bad_ = false;
  double local_sumsq_ = 0;  // of the local gradients checked this step (tally_checked_buckets)
};

}  // namespace gossamer::optim
