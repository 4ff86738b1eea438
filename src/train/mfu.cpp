// MfuMeter (see mfu.h).
#include "train/mfu.h"

#include <cmath>
#include <utility>

#include "core/error.h"
#include "core/log.h"

namespace gossamer::train {

MfuMeter::MfuMeter(double peak_gflops, int ranks, std::string source)
    : peak_gflops_(peak_gflops), ranks_(ranks), source_(std::move(source)) {
  GOSSAMER_CHECK(peak_gflops > 0 && std::isfinite(peak_gflops) && ranks >= 1,
                 "MFU: peak %g GFLOP/s (%s) for %d rank(s)", peak_gflops, source_.c_str(), ranks);
}

double MfuMeter::mfu(double flops_per_s) {
  if (!(flops_per_s > 0) || !std::isfinite(flops_per_s)) return 0.0;
  const double per_rank_gflops = flops_per_s / ranks_ * 1e-9;
  if (per_rank_gflops > peak_gflops_) {
    if (!raised_)
      log_warn(
          "MFU: a step ran at %.1f GFLOP/s per rank, above the assumed peak of %.1f (%s); the "
          "peak was too low (a busy machine at start-up?) and is raised to the achieved rate "
          "(set metrics.peak_gflops to fix it)",
          per_rank_gflops, peak_gflops_, source_.c_str());
    raised_ = true;
    peak_gflops_ = per_rank_gflops;
    source_ = "raised to an achieved step";
  }
  return per_rank_gflops / peak_gflops_;
}

}  // namespace gossamer::train
