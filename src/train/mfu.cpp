// MfuMeter and make_mfu_meter (see mfu.h).
#include "train/mfu.h"

#include <cmath>
#include <utility>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/cpu/gemm.h"
#include "kernels/matmul_peak.h"

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

MfuMeter make_mfu_meter(double peak_gflops, const kernels::OpTable& ops, kernels::MatmulDtype dtype,
                        int ranks) {
  if (peak_gflops > 0) return MfuMeter(peak_gflops, ranks, "metrics.peak_gflops");
  const bool host = ops.memory->host_accessible;
  if (host && dtype == kernels::MatmulDtype::MATMUL_DTYPE_FP32)
    return MfuMeter(kernels::cpu::gemm_peak_gflops_measured(), ranks, "measured sgemm");
  return MfuMeter(kernels::measure_matmul_gflops(ops, host ? 1024 : 2048, dtype), ranks,
                  strprintf("measured %s %s matmul", ops.memory->backend,
                            std::string(enum_name(dtype)).c_str()));
}

}  // namespace gossamer::train
