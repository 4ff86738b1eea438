// The sections of dynamic sparse training (docs/SMET.md): `optimizer.dst` (the masks and their
// schedule, read by both dst and smet) and `optimizer.smet` (SMET's fixes for regrown weights,
// read by smet only). String options are enums from parse time on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/enum_names.h"

namespace gossamer::optim {

// optimizer.dst: which weights are active and how the set changes.
struct DstConfig {
  double density = 0.5;
  int64_t block_size = 16;
  int64_t update_interval = 100;
  double prune_fraction = 0.2;
  double prune_fraction_end = 0.005;

  template <class V>
  void visit(V& v) {
    v("density", density,
      "fraction of the blocks of every attention and MLP matrix that are active, in (0, 1] "
      "(exactly round(density x blocks) per matrix, at least one); embeddings, the LM head, "
      "norms and biases stay dense");
    v("block_size", block_size,
      "weights per block, the unit of the masks: 1, 16, 32 or 128 consecutive weights of a "
      "matrix's flat storage (a last block of a matrix whose size is not a multiple is cut)");
    v("update_interval", update_interval,
      "every N steps the smallest-magnitude active blocks of every matrix are pruned and as "
      "many inactive ones regrown at random (0: the mask never changes)");
    v("prune_fraction", prune_fraction,
      "fraction of each matrix's active blocks pruned at an update, at step 0; it decays by a "
      "cosine over train.steps to prune_fraction_end (SMET's code: 0.2 to 0.005)");
    v("prune_fraction_end", prune_fraction_end, "the prune fraction at the last step");
  }
  // Throws gossamer::Error naming the key (prefixed by `path`, e.g. "optimizer.dst.").
  void validate(const std::string& path) const;
};

enum class RegrowWarmup {
  REGROW_WARMUP_MOMENTUM_INPLACE,
  REGROW_WARMUP_LR_RAMP,
  REGROW_WARMUP_NONE
};

// optimizer.smet: SMET's fixes for the cold start of regrown weights, each a switch.
struct SmetConfig {
  bool step_reset = true;
  RegrowWarmup warmup = RegrowWarmup::REGROW_WARMUP_MOMENTUM_INPLACE;
  int64_t regrow_warmup_steps = 100;
  bool ramp_from_start = true;
  double density_lr_power = 1.0;

  // Resume metadata (run/resume_check.h): the value a checkpoint written before a key existed
  // ran with (added_later), and the keys whose change leaves the run the same run (harmless).
  template <class R>
  static void resume_keys(R& r) {
    r.added_later("ramp_from_start", true);
  }

  template <class V>
  void visit(V& v) {
    v("step_reset", step_reset,
      "a regrown block's own step counter restarts (at 1, as in SMET's code), so its bias "
      "correction is that of a fresh Adam (false: the shared step count, as naive DST)");
    v("warmup", warmup,
      "the ramp over a block's first regrow_warmup_steps steps, r = min(step / "
      "regrow_warmup_steps, 1): momentum_inplace multiplies the stored momentum by r every "
      "step (it compounds; SMET's code, which also ramps the dense weights over the first "
      "steps of training); lr_ramp multiplies the step by r; none");
    v("regrow_warmup_steps", regrow_warmup_steps, "the length of the ramp (SMET's code: 100)");
    v("ramp_from_start", ramp_from_start,
      "true (SMET's code): every weight, dense ones and the initial blocks included, also ramps "
      "over the first regrow_warmup_steps steps of training; false: only regrown blocks ramp "
      "(ours)");
    v("density_lr_power", density_lr_power,
      "p of the density-aware learning rate of the sparse matrices, lr x density^-p (1: SMET's "
      "released runs; 0: off); the dense weights keep optimizer.lr");
  }
  void validate(const std::string& path) const;
};

}  // namespace gossamer::optim

namespace gossamer {
template <>
struct EnumNames<optim::RegrowWarmup> {
  static constexpr std::pair<optim::RegrowWarmup, std::string_view> values[] = {
      {optim::RegrowWarmup::REGROW_WARMUP_MOMENTUM_INPLACE, "momentum_inplace"},
      {optim::RegrowWarmup::REGROW_WARMUP_LR_RAMP, "lr_ramp"},
      {optim::RegrowWarmup::REGROW_WARMUP_NONE, "none"}};
};
}  // namespace gossamer
