// ScapeConfig: the `optimizer.scape` section (SCAPE, sparse communication on top of AdamS;
// docs/SCAPE.md): sparsity and its dense steps, how the mask is scored and sent, error
// feedback and the reading of the method. String options are enums from parse time on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/enum_names.h"

namespace gossamer::optim {

enum class ScapeReading { SCAPE_READING_A, SCAPE_READING_B };
enum class MaskScore { MASK_SCORE_MOMENTUM, MASK_SCORE_MOMENTUM_RESIDUAL, MASK_SCORE_GRADIENT };
enum class MaskWire { MASK_WIRE_AUTO, MASK_WIRE_INDICES, MASK_WIRE_BITMAP };
enum class ScapeNormaliser { SCAPE_NORMALISER_STEP, SCAPE_NORMALISER_AGE, SCAPE_NORMALISER_FROZEN };
enum class ErrorFeedback {
  ERROR_FEEDBACK_GRADIENT,
  ERROR_FEEDBACK_REPLAY,
  ERROR_FEEDBACK_MOMENTUM
};

struct ScapeConfig {
  double sparsity = 0.99;
  // -1: as many dense steps as the lr warm-up (schedule.warmup_steps), resolved when the run
  // config is parsed (run/run_config.cpp).
  static constexpr int64_t kDenseWarmupFromSchedule = -1;
  int64_t dense_warmup_steps = kDenseWarmupFromSchedule;
  int64_t dense_refresh_every = 0;
  MaskScore mask_score = MaskScore::MASK_SCORE_MOMENTUM_RESIDUAL;
  MaskWire mask_encoding = MaskWire::MASK_WIRE_AUTO;
  bool residual = true;
  ScapeReading reading = ScapeReading::SCAPE_READING_A;
  int64_t catch_up_max = 1;
  ScapeNormaliser normaliser = ScapeNormaliser::SCAPE_NORMALISER_AGE;
  ErrorFeedback error_feedback = ErrorFeedback::ERROR_FEEDBACK_GRADIENT;
  bool momentum_factor_masking = true;
  bool lazy_weight_decay = false;
  bool residual_keeps_clipped = false;
  double mask_age_bonus = 0.01;
  bool mask_per_tensor = false;
  bool stale_momentum = false;
  bool log_selection_by_tensor = false;
  double shard_block_kb = 64;
  int64_t sparsity_ramp_steps = 0;
  double ramp_start_sparsity = 0.75;

  // Resume metadata (run/resume_check.h): the value a checkpoint written before a key existed
  // ran with (added_later), and the keys whose change leaves the run the same run (harmless).
  template <class R>
  static void resume_keys(R& r) {
    r.added_later("mask_score", MaskScore::MASK_SCORE_MOMENTUM);
    r.added_later("normaliser", ScapeNormaliser::SCAPE_NORMALISER_STEP);
    r.added_later("error_feedback", ErrorFeedback::ERROR_FEEDBACK_GRADIENT);
    r.added_later("momentum_factor_masking", true);
    r.added_later("lazy_weight_decay", false);
    r.added_later("residual_keeps_clipped", false);
    r.added_later("mask_age_bonus", 0.0);
    r.added_later("mask_per_tensor", false);
    r.added_later("stale_momentum", false);
    r.added_later("sparsity_ramp_steps", int64_t{0});
    r.added_later("ramp_start_sparsity", 0.75);
    r.harmless("shard_block_kb");           // splits the space over the ranks, like the world size
    r.harmless("log_selection_by_tensor");  // telemetry
  }

  template <class V>
  void visit(V& v) {
    v("sparsity", sparsity,
      "fraction of coordinates NOT communicated per step (0.9, 0.99; 0 = dense AdamS)");
    v("dense_warmup_steps", dense_warmup_steps,
      "the first N steps are dense AdamS steps (the momentum that scores the mask is zero at "
      "the start); -1: as many as schedule.warmup_steps, the lr warm-up (docs/RESULTS.md: "
      "switching to sparse steps before the lr warm-up ends costs SCAPE several percent)");
    v("dense_refresh_every", dense_refresh_every,
      "every N-th step is dense, flushing all residuals (0: never)");
    v("mask_score", mask_score,
      "momentum: top-k of |m| (the specified reading); momentum_residual (default): top-k of "
      "|beta1 m + (1 - beta1) ranks e_r|, the momentum after applying the pending residual "
      "(without a residual, as in reading B, the same as momentum); gradient: top-k of the "
      "owner's residual-corrected local gradient (the baseline). At parallel.zero_stage 0 with "
      "several ranks a score from a rank's residual is rank 0's, sent to every rank");
    v("mask_encoding", mask_encoding, "mask on the wire: auto (the smaller), indices or bitmap");
    v("residual", residual, "keep the unsent gradient mass (error feedback; reading A)");
    v("reading", reading,
      "A: the specified method (error-feedback residual of gradients, mask from the owner's "
      "momentum); B: every rank keeps a dense local momentum and sends it at the mask, the mask "
      "is the owner's top-k of its local momentum (docs/SCAPE.md)");
    v("catch_up_max", catch_up_max,
      "reading B: a coordinate updated after a steps moves min(a, N) AdamS steps at once (1: one "
      "step per update)");
    v("normaliser", normaliser,
      "reading A: step: AdamS's normaliser sees the synchronised value as one gradient (the "
      "specified reading); age (default): it sees the value divided by the steps since the "
      "coordinate's last update, so an accumulated residual moves the coordinate in proportion "
      "to its mass (ours; without a residual the value is one step's and age is step); frozen: "
      "dense steps keep an average of AdamS's squared normaliser per "
      "coordinate and sparse steps divide by its root, frozen (1-bit Adam's fix; docs/SCAPE.md)");
    v("error_feedback", error_feedback,
      "reading A: what the residual accumulates and how the owner applies it. gradient: the "
      "unsent gradients, applied as one AdamS step (specified); replay: the same, applied as "
      "a steps of the constant gradient (mass / a) through the momentum (ours); momentum: each "
      "rank keeps a local momentum and accumulates it, the owner applies the sum of the a "
      "momenta (DGC's momentum correction; docs/SCAPE.md)");
    v("momentum_factor_masking", momentum_factor_masking,
      "error_feedback momentum: the local momentum restarts from zero where it was sent (DGC's "
      "momentum factor masking; needs dense_refresh_every 0)");
    v("lazy_weight_decay", lazy_weight_decay,
      "reading A: a coordinate selected after a steps decays by (1 - lr wd)^a, the decay it "
      "missed (false: one step's decay, only when selected)");
    v("residual_keeps_clipped", residual_keeps_clipped,
      "reading A: when clipping scales the synchronised values by c < 1, each rank keeps the "
      "clipped share (1 - c) of what it sent in its residual instead of dropping it");
    v("stale_momentum", stale_momentum,
      "reading A: a coordinate not selected keeps moving every step by its last AdamS step "
      "(lr times (m/c)/den from its last update), so nothing stands still between selections; "
      "every rank keeps those steps for the whole space and the owners send each selected "
      "coordinate's new one with its value (twice the parameter bytes; our reading)");
    v("mask_age_bonus", mask_age_bonus,
      "k >= 0: the mask score is multiplied by 1 + k * (steps since the coordinate's last "
      "update), so long-unselected coordinates are explored (0: off, the specified reading)");
    v("mask_per_tensor", mask_per_tensor,
      "each coordinate's mask score is divided by the root mean square of the scores of its "
      "tensor (over the part this rank owns), so the top-k takes about the same fraction of "
      "every tensor, as DGC's per-layer top-k does (false: one top-k over the raw scores, "
      "which favours the tensors with the largest gradients)");
    v("sparsity_ramp_steps", sparsity_ramp_steps,
      "after the dense warm-up, the sparsity rises from ramp_start_sparsity to sparsity "
      "geometrically in density over this many steps, as DGC ramps 75% -> 99.9% (0: it jumps)");
    v("ramp_start_sparsity", ramp_start_sparsity,
      "the sparsity of the first sparse step when sparsity_ramp_steps > 0");
    v("shard_block_kb", shard_block_kb,
      "the shards: every block of this many KB (fp32) of the flat space is split over the "
      "ranks, so each rank's top-k covers every tensor alike; small blocks make it match the "
      "top-k of one rank (docs/RESULTS.md); SCAPE's collectives do not depend on it");
    v("log_selection_by_tensor", log_selection_by_tensor,
      "log, on every sparse step, the fraction of each tensor the mask selected "
      "(optim.selected_fraction.<tensor> in metrics.jsonl; a diagnostic)");
  }
  // Throws gossamer::Error naming the key (prefixed by `path`, e.g. "optimizer.scape.").
  void validate(const std::string& path) const;
};

}  // namespace gossamer::optim

namespace gossamer {
template <>
struct EnumNames<optim::ScapeReading> {
  static constexpr std::pair<optim::ScapeReading, std::string_view> values[] = {
      {optim::ScapeReading::SCAPE_READING_A, "A"}, {optim::ScapeReading::SCAPE_READING_B, "B"}};
};
template <>
struct EnumNames<optim::MaskScore> {
  static constexpr std::pair<optim::MaskScore, std::string_view> values[] = {
      {optim::MaskScore::MASK_SCORE_MOMENTUM, "momentum"},
      {optim::MaskScore::MASK_SCORE_MOMENTUM_RESIDUAL, "momentum_residual"},
      {optim::MaskScore::MASK_SCORE_GRADIENT, "gradient"}};
};
template <>
struct EnumNames<optim::ScapeNormaliser> {
  static constexpr std::pair<optim::ScapeNormaliser, std::string_view> values[] = {
      {optim::ScapeNormaliser::SCAPE_NORMALISER_STEP, "step"},
      {optim::ScapeNormaliser::SCAPE_NORMALISER_AGE, "age"},
      {optim::ScapeNormaliser::SCAPE_NORMALISER_FROZEN, "frozen"}};
};
template <>
struct EnumNames<optim::ErrorFeedback> {
  static constexpr std::pair<optim::ErrorFeedback, std::string_view> values[] = {
      {optim::ErrorFeedback::ERROR_FEEDBACK_GRADIENT, "gradient"},
      {optim::ErrorFeedback::ERROR_FEEDBACK_REPLAY, "replay"},
      {optim::ErrorFeedback::ERROR_FEEDBACK_MOMENTUM, "momentum"}};
};
template <>
struct EnumNames<optim::MaskWire> {
  static constexpr std::pair<optim::MaskWire, std::string_view> values[] = {
      {optim::MaskWire::MASK_WIRE_AUTO, "auto"},
      {optim::MaskWire::MASK_WIRE_INDICES, "indices"},
      {optim::MaskWire::MASK_WIRE_BITMAP, "bitmap"}};
};
}  // namespace gossamer
