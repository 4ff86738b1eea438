// MFU (model FLOPs utilisation) of a run: the achieved training FLOP/s (6N + 6LCT per token)
// over the matrix-product peak of all ranks. A rank's peak is metrics.peak_gflops, or the rate
// of its matrix products in their dtype measured at start-up (make_mfu_meter).
// Invariant: a reported MFU never exceeds 1. A step that achieves more than the assumed peak
// proves the peak too low (measured while the machine was busy, or set too low by the user):
// the meter raises the peak to the achieved rate and says so once.
#pragma once

#include <string>

#include "kernels/matmul_dtype.h"
#include "kernels/ops.h"

namespace gossamer::train {

class MfuMeter {
 public:
  // peak_gflops: of one rank; source: where it came from, for the log ("measured sgemm").
  MfuMeter(double peak_gflops, int ranks, std::string source);
  double peak_gflops() const { return peak_gflops_; }
  const std::string& source() const { return source_; }
  // MFU of a step that ran `flops_per_s` FLOP/s over all ranks; raises the peak when needed.
  double mfu(double flops_per_s);

 private:
  double peak_gflops_;
  int ranks_;
  std::string source_;
  bool raised_ = false;
};

// The meter of a run of `ranks` ranks: `peak_gflops` when > 0 (metrics.peak_gflops), else
// measured here: the best sgemm rate (kernels/cpu/gemm.h) for fp32 products in host memory,
// else the rate of the op table's own product in `dtype` (kernels/matmul_peak.h: bf16 with its
// rounding, or the GPU's), so that MFU is against the peak of the products that run.
MfuMeter make_mfu_meter(double peak_gflops, const kernels::OpTable& ops, kernels::MatmulDtype dtype,
                        int ranks);

}  // namespace gossamer::train
