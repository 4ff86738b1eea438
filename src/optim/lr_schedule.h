// Learning-rate schedule: linear warm-up to the peak, then cosine (or linear, or constant)
// decay to min_lr_ratio * peak at the last step; or warm-up-stable-decay (wsd): the peak until
// the last decay_steps steps, which decay linearly to min_lr_ratio * peak. Cosine and linear
// decays stretch with train.steps, so a run resumed with more steps jumps in lr (the trainer
// warns, naming both values); wsd in its stable phase continues unchanged. step is 0-based.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/enum_names.h"

namespace gossamer::optim {

enum class Decay { DECAY_COSINE, DECAY_LINEAR, DECAY_CONSTANT, DECAY_WSD };

struct ScheduleConfig {
  int64_t warmup_steps = 0;
  Decay decay = Decay::DECAY_COSINE;
  double min_lr_ratio = 0.1;
  int64_t decay_steps = 0;  // wsd: the final decay's length

  template <class V>
  void visit(V& v) {
    v("warmup_steps", warmup_steps,
      "linear warm-up: lr = peak * (step+1) / warmup_steps for step < warmup_steps");
    v("decay", decay, "the shape of the decay after warm-up");
    v("min_lr_ratio", min_lr_ratio, "final lr as a fraction of the peak (cosine, linear and wsd)");
    v("decay_steps", decay_steps,
      "wsd only: the last decay_steps steps decay linearly from the peak to min_lr_ratio x peak; "
      "before them the lr stays at the peak, so a run made longer on resume continues unchanged");
  }
  void validate(const std::string& path = "schedule.") const;
};

double lr_at(const ScheduleConfig& s, double peak, int64_t step, int64_t total_steps);

}  // namespace gossamer::optim

namespace gossamer {
template <>
struct EnumNames<optim::Decay> {
  static constexpr std::pair<optim::Decay, std::string_view> values[] = {
      {optim::Decay::DECAY_COSINE, "cosine"},
      {optim::Decay::DECAY_LINEAR, "linear"},
      {optim::Decay::DECAY_CONSTANT, "constant"},
      {optim::Decay::DECAY_WSD, "wsd"}};
};
}  // namespace gossamer
