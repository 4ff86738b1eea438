// SCAPE: sparse communication on top of AdamS (arXiv 2607.01678; our readings A and B in
// docs/SCAPE.md; config section optimizer.scape).
// Sharded like ZeRO-1 (parallel.zero_stage 1): rank r owns S_r, a 1/N slice of every block of
// optimizer.scape.shard_block_kb of the flat space (ShardLayout), keeps AdamS's momentum m for it,
// and at the end of step t selects the exact top-k_r of S_r by the mask score (k_r = ceil((1 -
// sparsity) |S_r|)). That mask shard is all-gathered asynchronously, overlapping step t+1's forward
// and backward (the one-step delay), and is used by step t+1: every rank adds its local gradient to
// its error-feedback residual e_r (reading A) or its local momentum (reading B), packs it at the
// mask into one compact buffer (rank by rank), and the compact buffers are reduce-scattered (owner
// r receives its k_r summed values); the owner applies AdamS to its selected coordinates only
// (weight decay included; the others keep their value and momentum), and the updated values are
// all-gathered sparsely and scattered into every replica. Dense steps (warm-up, periodic
// refresh) are the same with the mask "everything". zero_stage 0 keeps m replicated: every
// rank computes the same full mask (or, for a score from a rank's own residual or gradient,
// rank 0 selects it and sends it, with the same one-step delay), the compact buffer is
// all-reduced, and no parameter exchange is needed. At world size 1 the same numerics run without
// communication. Every vector over parameters, gradients or state lives in the op table's memory
// (host or GPU) and every loop over one is an op (gather / scatter / scale_at, the mask score,
// top-k); the masks themselves (k indices) are also kept on the host, for their wire encoding,
// the local/flat index maps and the telemetry, and copied to the op table's memory once per step.
// Invariant: after step(), the parameters are bit-identical on every rank; the mask in use at
// step t was computed from m after step t-1; last_host_ equals last_.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/buffer.h"
#include "kernels/copy_run.h"
#include "optim/optimizer.h"
#include "optim/shard_layout.h"
#include "optim/sharded_optimizer.h"
#include "optim/sparse_mask.h"

namespace gossamer::optim {

// The registry's factory.
std::unique_ptr<Optimizer> make_scape(const OptimizerSetup& setup);

class Scape final : public ShardedOptimizer {
 public:
  struct TensorRun {  // a tensor's part of an owned piece (local offset, length, view index)
    size_t local, n, tensor;
  };
  explicit Scape(const OptimizerSetup& setup);
  ~Scape() override;

  const char* name() const override { return "scape"; }
  Replicas replicas() const override { return Replicas::REPLICAS_IDENTICAL_EVERY_STEP; }
  double gradient_scale() const override { return 1.0 / world_; }
  void micro_batch_begin(int index, int count) override;
  StepResult step(const StepContext& ctx) override;
  std::vector<StateTensor> state() override;
  void state_loaded() override;
  size_t state_bytes() const override;
  std::vector<std::pair<std::string, double>> step_metrics() const override { return metrics_; }
  bool supports_device_memory() const override { return true; }

  // Whether step t (1-based) is dense by the schedule (warm-up, refresh, sparsity 0).
  bool dense_step(int64_t t) const;
  // Flat indices of the mask used by the last step, rank by rank, each rank's sorted (empty
  // after a dense step).
  const std::vector<uint32_t>& last_mask() const { return cur_mask_; }
  // This rank's selection for the next step (local to its packed slice, sorted).
  const std::vector<uint32_t>& next_mask_shard() const { return next_own_; }
  const OwnedShard& owned_shard() const { return own_; }
  // Coordinates rank selects for the mask being prepared (the next step's).
  size_t k_of(int rank) const;
  // The density of step t's mask (the sparsity ramp; 1 - sparsity without one).
  double density_at(int64_t t) const;

 private:
  // What the reduction left on this rank: its summed values, one per selected owned
  // coordinate (n of them), at `offset` in the compact buffer (sparse steps).
  struct Reduced {
    float* values = nullptr;
    size_t n = 0, offset = 0;
    bool finite = true;
    double local_sq = 0;  // reading B: this rank's squared gradient norm
    double sent_sq = 0;   // reading A: squared norm of what this rank sent
    double clip = 1.0;    // the clipping factor applied to the values
    int64_t bytes = 0;
  };
  // What one step measured, for metrics.jsonl.
  struct StepFigures {
    bool dense = false;
    double mask_wait_s = 0, mask_exchange_s = 0;
    int64_t grad_bytes = 0, param_bytes = 0, bytes_sent = 0;
    std::array<float, 4> sums{};  // over ranks: unsent residual^2, covered, age sum, known
  };
  void check_modes(int zero_stage);
  void record_metrics(const StepFigures& fig);
  double take_mask(bool have_mask, double* exchange_s);
  float* payload(double* local_sq);
  Reduced reduce_dense(float* payload, double local_sq);
  Reduced reduce_sparse(float* payload, double local_sq);
  double clip(Reduced& r, std::span<float> extra);
  void settle_residual(const Reduced& r, bool dense, int64_t t);
  size_t rank_base(int rank) const;  // offset of rank's pieces in a rank-major buffer
  void build_pack_runs();            // sharded: pack_runs_, unpack_runs_, own_pack_runs_
  void pack_rank_major(const float* flat, float* out) const;
  void unpack_rank_major(const float* in, float* flat) const;
  void recount_ages();
  void tally_update(const uint32_t* idx, size_t n, int64_t t);
  void update_selected(const Reduced& r, bool dense, const StepContext& ctx);
  int64_t distribute_params(const Reduced& r, bool dense);
  void distribute(float* flat, const Reduced& r, bool dense);
  void apply_stale_moves(double lr, bool dense);
  void select_next_mask(int64_t t);
  void normalise_scores_per_tensor(float* scores);
  void score_owned(int64_t t);
  // The owned coordinates of a flat buffer in owned order: the buffer itself when this rank
  // owns everything, else gathered into scores_.
  const float* owned_values(const float* flat);
  void upload_mask();
  void launch_mask_exchange(MaskEncoding encoding);
  void receive_rank0_mask();
  void finish_mask_exchange();
  // Reading B and "momentum" feedback: u_r = beta1 u_r + (1 - beta1) clip(g); returns u_r, sets
  // this rank's squared gradient norm.
  float* accumulate_local_momentum(const float* g, double* local_sq);

  ScapeConfig sc_;
  model::ParamLayout layout_;  // the tensors, for optimizer.scape.log_selection_by_tensor
  bool sharded_;               // zero_stage 1 with more than one rank
  // zero_stage 0 at world size > 1 with a score from a rank's own residual or gradient: rank 0
  // selects the whole mask and sends it (the ranks' own selections would differ).
  bool mask_from_rank0_ = false;
  bool selects_mask() const { return !mask_from_rank0_ || rank_ == 0; }
  bool code_form_;
  double density_;          // 1 - sparsity, the target
  double mask_density_;     // of the mask being prepared (the ramp's value for the next step)
  bool reading_b_;          // optimizer.scape.reading "B"
  bool use_residual_;       // reading A with optimizer.scape.residual
  bool momentum_feedback_;  // reading A, error_feedback "momentum": e_r accumulates u_r
  bool local_clip_;         // each rank clips its own gradient into u_r (B, "momentum")
  // In the op table's memory:
  Buffer<float> m_;          // momentum of the owned slice (packed)
  Buffer<float> residual_;   // e_r, the whole flat space (reading A with residual)
  Buffer<float> local_m_;    // u_r, the whole flat space (reading B, "momentum" feedback)
  Buffer<float> last_;       // step of each owned coordinate's last update (-1: unknown)
  Buffer<float> den_sq_;     // normaliser "frozen": per owned coordinate, AdamS's den^2 averaged
  Buffer<uint8_t> decay_;    // per owned coordinate: weight decay applies
  Buffer<float> stale_dir_;  // stale_momentum: each coordinate's last step / lr
  Buffer<uint32_t> all_owned_dev_;   // 0 .. owned-1, the "everything" mask of dense steps
  Buffer<uint32_t> own_global_dev_;  // sharded: flat index of each owned coordinate
  Buffer<float> scores_;             // the mask score of each owned coordinate
  Buffer<uint32_t> next_dev_;        // this rank's selection, as top-k wrote it
  Buffer<float> pack_;          // sharded: a flat buffer rank by rank, for the dense collectives
  Buffer<float> compact_;       // gradient values at the mask, then parameter values
  Buffer<uint32_t> mask_dev_;   // cur_mask_
  Buffer<uint32_t> local_dev_;  // this rank's part of cur_mask_ as local indices
  Buffer<uint8_t> wire_send_dev_, wire_recv_dev_;  // the mask exchange's buffers
  // On the host:
  std::vector<float> last_host_;  // a copy of last_ for the update-age telemetry
  // The update-age telemetry, kept up to date with last_ at O(updated) per step: owned
  // coordinates updated after the warm-up, those with a known last update, the sum of their steps.
  struct AgeTally {
    double covered = 0, known = 0, sum_last = 0;
  } ages_;
  double residual_sq_ = 0;  // squared norm of the residual after this step's accumulation
  // mask_per_tensor: the owned runs of each tensor, the coordinates owned of each tensor and a
  // scratch sum of squares per tensor.
  std::vector<TensorRun> tensor_runs_;
  std::vector<double> tensor_owned_, tensor_sq_;
  Buffer<double> run_sq_;  // per run: its sum of squared scores (op memory)
  std::vector<double> run_sq_host_;
  std::vector<uint32_t> all_owned_;                   // 0 .. owned-1
  std::vector<std::vector<ShardPiece>> rank_pieces_;  // sharded: every rank's pieces
  // Sharded, in the op table's memory: flat -> rank-major pack, back, this rank's pieces only.
  Buffer<kernels::CopyRun> pack_runs_, unpack_runs_, own_pack_runs_;
  std::vector<uint32_t> cur_local_;                 // this rank's part of cur_mask_, local
  std::vector<uint32_t> cur_mask_;                  // flat indices, rank by rank
  std::vector<uint32_t> cur_packed_, prev_packed_;  // the same as rank base + local (sorted)
  std::vector<size_t> cur_counts_;                  // per rank, entries of cur_mask_
  std::vector<uint32_t> next_own_;                  // local, for the next step
  // The in-flight mask exchange.
  MaskEncoding wire_encoding_ = MaskEncoding::INDICES;
  std::vector<uint8_t> wire_send_, wire_recv_;
  std::vector<size_t> wire_counts_;
  comm::Work mask_work_;
  bool mask_in_flight_ = false, mask_ready_ = false, relaunch_after_load_ = false;
  double mask_issue_bytes_ = 0;
  std::vector<uint8_t> mask_flags_;  // checkpoint view of next_own_ (1: selected)
  uint8_t has_mask_ = 0;             // checkpoint: whether next_own_ is a mask for the next step
  std::vector<std::pair<std::string, double>> metrics_;
};

}  // namespace gossamer::optim
