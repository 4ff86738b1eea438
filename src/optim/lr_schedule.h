// Learning-rate schedule: linear warm-up to the peak, then cosine (or linear, or constant)
// decay to min_lr_ratio * peak at the last step. step is 0-based.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace gossamer::optim {

struct ScheduleConfig {
  int64_t warmup_steps = 0;
  std::string decay = "cosine";
  double min_lr_ratio = 0.1;

  template <class V>
  void visit(V& v) {
    v("warmup_steps", warmup_steps,
      "linear warm-up: lr = peak * (step+1) / warmup_steps for step < warmup_steps");
    v("decay", decay, "after warm-up: \"cosine\", \"linear\" or \"constant\"");
    v("min_lr_ratio", min_lr_ratio, "final lr as a fraction of the peak (cosine and linear)");
  }
  void validate(const std::string& path = "schedule.") const;
};

double lr_at(const ScheduleConfig& s, double peak, int64_t step, int64_t total_steps);

}  // namespace gossamer::optim
