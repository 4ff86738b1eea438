// AdamStep: the hyper-parameters of one Adam-family update, the last argument of the optimizer
// ops (adamw_update, adamw_update_blocks, adams_update, adams_update_indexed,
// adams_update_from_momentum; kernels/ops.h,
// formulas in kernels/cpu/adamw.h and kernels/cpu/adams.h). One struct instead of a tail of
// same-typed scalars, so that call sites name every value (designated initialisers) and two of
// them cannot be swapped silently.
// Invariant: the fields without a default must be given by every caller (-Wextra warns on a
// designated initialiser that omits one; -Werror builds reject it); the defaulted ones are read
// only by some ops, as listed per field.
#pragma once

#include <cstdint>

namespace gossamer::kernels {

// What adams_update_indexed's g[j] holds for a coordinate last updated a steps ago (SCAPE reading
// A, docs/SCAPE.md "error feedback").
enum class Accumulated : uint8_t {
  ONE_GRADIENT,     // the gradient mass of a steps, applied as one AdamS step
  GRADIENT_REPLAY,  // the same mass, replayed as a steps of the constant gradient g / a
  MOMENTUM_SUM,     // the sum of the a momenta since the last update (DGC momentum correction)
};

// How adamw_update_blocks ramps a block in over its first warmup_steps steps (SMET's optimizer
// warm-up for regrown weights, docs/SMET.md), with r = min(steps[j] / warmup_steps, 1).
enum class WarmupRamp : uint8_t {
  NONE,              // no ramp
  MOMENTUM_INPLACE,  // the stored momentum is multiplied by r every step (compounds; SMET's code)
  LR_RAMP,           // the step is multiplied by r; the momentum is not touched
};

// Read by every op: lr, beta1, beta2, eps, weight_decay, t.
struct AdamStep {
  float lr;     // learning rate of this update (schedule applied)
  float beta1;  // momentum decay
  float beta2;  // second-moment decay (AdamW: of v; AdamS: of the normaliser)
  float eps;    // added to the denominator
  // Decoupled decay, param *= 1 - lr * weight_decay: on all n coordinates (adamw_update,
  // adams_update), where decay[i] != 0 (adams_update_indexed, adams_update_from_momentum).
  float weight_decay;
  int64_t t;  // 1-based update count (bias correction; catch-up gaps)
  // AdamS bias-corrected "code" form (false: the paper form, c = 1). Read by the three adams_*
  // ops, not by adamw_update (AdamW always corrects both moments).
  bool code_form = true;
  // At most this many missed steps applied at once (values < 1 count as 1). Read by
  // adams_update_from_momentum only.
  int catch_up_max = 1;
  // Read by adams_update_indexed only (SCAPE reading A, docs/SCAPE.md): the gradient g of a
  // coordinate last updated a steps ago is the mass of a steps; age_normaliser puts g / a in the
  // normaliser (the momentum still takes all of g), lazy_decay applies the a steps of weight
  // decay at once ((1 - lr wd)^a).
  bool age_normaliser = false;
  bool lazy_decay = false;
  // Read by adams_update_indexed only: how g[j] is applied (above), and for MOMENTUM_SUM whether
  // the momenta summed restarted from zero at the last update (momentum factor masking) or
  // continued from m.
  Accumulated accumulated = Accumulated::ONE_GRADIENT;
  bool momentum_restarts = false;
  // Read by adams_update_indexed only, with IndexedAdamsState::den_sq: the normaliser is
  // sqrt(den_sq) (frozen) instead of AdamS's; false: AdamS's, and den_sq tracks its square.
  bool frozen_normaliser = false;
  // Read by adamw_update_blocks only: the warm-up ramp of a block over its first warmup_steps
  // steps (values <= 1: no ramp); with ramp_restarted_only, only blocks whose count is behind t
  // (restarted at a regrowth) ramp, not those counting since the start of training.
  WarmupRamp ramp = WarmupRamp::NONE;
  int warmup_steps = 0;
  bool ramp_restarted_only = false;
};

// The owner's per-coordinate state that adams_update_indexed reads and updates, by the local
// index idx[j] (dir by the flat index pidx[j]).
template <class Real>
struct IndexedAdamsState {
  Real* m;               // momentum
  float* last;           // step of the last update (negative: unknown); becomes t
  const uint8_t* decay;  // weight decay applies where != 0
  // Optional (null: not kept): the normaliser's square, an exponential average (beta2) of den^2
  // over the updates that are not frozen (first value: den^2), the frozen normaliser's value.
  float* den_sq = nullptr;
  // Optional: receives the step per unit of lr, (m/c) / den, at pidx[j] (SCAPE's stale momentum).
  Real* dir = nullptr;
};

}  // namespace gossamer::kernels
