// MFU (model FLOPs utilisation) of a run: the achieved training FLOP/s (6N + 6LCT per token)
// over the matrix-product peak of all ranks. A rank's peak is metrics.peak_gflops, or its best
// sgemm rate measured at start-up after a warm-up (kernels/cpu/gemm.h).
// Invariant: a reported MFU never exceeds 1. A step that achieves more than the assumed peak
// proves the peak too low (measured while the machine was busy, or set too low by the user):
// the meter raises the peak to the achieved rate and says so once.
#pragma once

#include <string>

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

}  // namespace gossamer::train
