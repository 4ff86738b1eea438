// Dynamic sparse training (docs/SMET.md): `smet` (SMET: arXiv 2606.00888, with the authors'
// code as reference) and `dst` (the naive baseline: the same masks and schedule without SMET's
// fixes). Every attention and MLP matrix is sparse at optimizer.dst.density, in blocks of B
// weights (BlockMask); everything else is dense. Every optimizer.dst.update_interval steps the
// smallest active blocks of every matrix are pruned and as many regrown at random, their
// weights and moments zero. AdamW updates active blocks only; SMET adds a step counter per block
// restarted at regrowth with a warm-up ramp, and a learning rate of lr x density^-p for the
// sparse matrices (optimizer.smet). Memory: the sparse matrices' gradients (routed by the model,
// one block's matrices at a time, compacted in the backward hook), moments and step counts
// exist for active blocks only (slot order, BlockMask); weights stay dense, inactive ones zero.
// Replicated (parallel.zero_stage 0): each rank all-reduces the compact gradients of the active
// blocks and the dense gradients, view by view as the backward hook reports them, and applies
// the same update; masks agree because they depend only on the seed, the step and the
// parameters (checked by a 16-byte all-reduce of the mask hash at every topology update).
// Every vector over parameters, gradients or state lives in the op table's memory (host or
// GPU) and every loop over one is an op (accumulate_blocks, zero_blocks, block_l1_norms, the
// block-wise AdamW); the masks' decisions are made on the host from the blocks' L1 norms (one
// read-back per topology update), and the block indices are uploaded after each.
// Invariants: after step() the parameters are bit-identical on every rank; every inactive
// weight is exactly zero from attach() on; at density 1 with no fixes this is AdamW; blocks_dev_
// equals mask_.blocks().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "core/buffer.h"
#include "optim/block_mask.h"
#include "optim/optimizer.h"
#include "optim/sharded_optimizer.h"
#include "optim/sync_common.h"

namespace gossamer::optim {

// The registry's factories.
std::unique_ptr<Optimizer> make_smet(const OptimizerSetup& setup);
std::unique_ptr<Optimizer> make_dst(const OptimizerSetup& setup);

class SparseTraining final : public ShardedOptimizer {
 public:
  // What distinguishes smet from dst (dst: no reset, no ramp, p = 0).
  struct Fixes {
    bool step_reset;
    kernels::WarmupRamp ramp;
    int64_t warmup_steps;
    bool ramp_from_start;
    double density_lr_power;
  };
  SparseTraining(const OptimizerSetup& setup, const char* name, const Fixes& fixes);
  ~SparseTraining() override;

  const char* name() const override { return name_; }
  Replicas replicas() const override { return Replicas::REPLICAS_IDENTICAL_EVERY_STEP; }
  bool routes_block_weight_gradients() const override { return true; }
  // Adds a sparse matrix's gradient (dense, from the model's scratch) to its active slots.
  void routed_gradient_ready(size_t view, const float* grad) override;
  double gradient_scale() const override { return 1.0 / world_; }
  void micro_batch_begin(int index, int count) override;
  void grads_ready(size_t begin, size_t end) override;
  void micro_batch_end(int index, int count) override;
  StepResult step(const StepContext& ctx) override;
  std::vector<StateTensor> state() override;
  void state_loaded() override;
  size_t state_bytes() const override;
  std::vector<std::pair<std::string, double>> step_metrics() const override { return metrics_; }
  bool supports_device_memory() const override { return true; }

  const BlockMask& mask() const { return mask_; }
  // Bytes kept per weight of the sparse matrices for their gradients and optimizer state:
  // compact gradient, m, v (4 B each per active slot element), block index and step (4 B each
  // per active block), over the matrices' weights.
  double sparse_bytes_per_weight() const;
  // The prune fraction of a topology update at step t (cosine from prune_fraction to
  // prune_fraction_end over the run).
  double prune_fraction(int64_t t) const;

 private:
  // A stretch of dense views (not sparse) in flat order, within one range the model reports.
  struct DenseRun {
    size_t begin, n, local;  // flat begin, elements, offset in the packed dense moments
    bool decay;
  };
  void on_attach() override;
  // Checks and starts the all-reduce of the views that end at or before ready_ and have not
  // been sent (last micro-batch): a sparse view's compact slots, a stretch of dense views.
  void launch_ready();
  // Reads this step's launched sums of squares back (one wait) into local_sumsq_, local_bad_.
  void tally_checked();
  void finish_all();
  void update(const StepContext& ctx);
  void topology_update(int64_t t);
  void check_masks_agree(int64_t t);
  void count_fresh();  // fresh_numel_ and the slot lists from fresh_
  // Zeroes the listed blocks of sparse view k of the parameters (through list_dev_).
  void zero_blocks_of(size_t k, const std::vector<int32_t>& blocks);

  const char* name_;
  Fixes fixes_;
  DstConfig dst_;
  uint64_t seed_;
  int64_t total_steps_;
  BlockMask mask_;
  std::vector<DenseRun> dense_runs_;
  std::vector<int> sparse_of_view_;  // per layout view: index into mask_.views(), or -1
  size_t dense_total_ = 0;
  // In the op table's memory. Compact state of the sparse views, by slot: B elements per slot.
  Buffer<float> grad_c_, m_c_, v_c_, update_sq_;
  Buffer<int32_t> steps_;       // per slot: the block's step count
  Buffer<int32_t> blocks_dev_;  // per slot: its block (mask_.blocks())
  Buffer<float> dense_m_, dense_v_;
  Buffer<int32_t> dense_block_;    // {0}: a dense run is one block
  Buffer<int32_t> dense_step_;     // {t}: the dense runs' step count
  int64_t dense_step_value_ = -1;  // what dense_step_ holds (-1: not set yet)
  Buffer<double> l1_;              // per slot: its block's L1 norm (topology updates)
  Buffer<int32_t> list_dev_;       // a list of blocks or slots to zero
  Buffer<uint32_t> fresh_slots_dev_, old_slots_dev_;  // the slots by fresh_, for the telemetry
  Buffer<float> sq_scratch_;                          // update_sq_ at one of those lists
  LaunchedSums launched_sq_;  // per launch this step: its local sum of squares
  size_t launched_ = 0;       // launches this step
  // On the host.
  HostBuffer<uint8_t> fresh_;  // per slot: regrown at the last topology update
  std::vector<uint32_t> fresh_slots_, old_slots_;
  size_t active_numel_ = 0, fresh_numel_ = 0;  // elements of all / of the fresh active blocks
  bool loaded_ = false;
  const model::ParamLayout& layout_;
  // Per step.
  bool communicating_ = false;
  size_t ready_ = 0, next_view_ = 0;  // flat end reported ready; first view not sent
  double local_sumsq_ = 0;
  int64_t grad_bytes_ = 0;
  size_t routed_seen_ = 0;  // sparse matrices whose gradients this micro-batch handed over  // sent
                            // by this rank's gradient all-reduces this step
  std::vector<comm::Work> pending_;
  bool local_bad_ = false;
  std::vector<std::pair<std::string, double>> metrics_;
};

}  // namespace gossamer::optim
