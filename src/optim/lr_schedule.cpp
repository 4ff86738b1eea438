// Learning-rate schedule (see lr_schedule.h).
#include "optim/lr_schedule.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::optim {

void ScheduleConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(warmup_steps >= 0, "%swarmup_steps: must be >= 0, found %lld", p.c_str(),
                 static_cast<long long>(warmup_steps));
  GOSSAMER_CHECK(min_lr_ratio >= 0 && min_lr_ratio <= 1,
                 "%smin_lr_ratio: must lie in [0, 1], found %g", p.c_str(), min_lr_ratio);
  GOSSAMER_CHECK(decay == Decay::DECAY_WSD ? decay_steps > 0 : decay_steps == 0,
                 "%sdecay_steps: %s, found %lld", p.c_str(),
                 decay == Decay::DECAY_WSD ? "must be > 0 with decay \"wsd\""
                                           : "goes with decay \"wsd\" only (leave it 0)",
                 static_cast<long long>(decay_steps));
}

double lr_at(const ScheduleConfig& s, double peak, int64_t step, int64_t total_steps) {
  if (step < s.warmup_steps) return peak * double(step + 1) / double(s.warmup_steps);
  if (s.decay == Decay::DECAY_CONSTANT) return peak;
  const double min_lr = peak * s.min_lr_ratio;
  if (s.decay == Decay::DECAY_WSD) {  // the last decay_steps steps end at min_lr
    const int64_t first = std::max<int64_t>(s.warmup_steps, total_steps - s.decay_steps);
    if (step < first) return peak;
    const int64_t span = std::max<int64_t>(1, total_steps - 1 - first);
    const double progress = std::min(1.0, double(step - first) / double(span));
    return peak - progress * (peak - min_lr);
  }
  const int64_t span = std::max<int64_t>(1, total_steps - 1 - s.warmup_steps);
  const double progress = std::min(1.0, double(step - s.warmup_steps) / double(span));
  const double coeff = s.decay == Decay::DECAY_COSINE
                           ? 0.5 * (1.0 + std::cos(3.141592653589793 * progress))
                           : 1.0 - progress;
  return min_lr + coeff * (peak - min_lr);
}

}  // namespace gossamer::optim
