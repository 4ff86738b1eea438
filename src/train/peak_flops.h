// Measures the best fp32 matrix-product rate of this process (GFLOP/s) on a few
// transformer-like shapes through the shipped gemm(); the denominator of the CPU MFU.
#pragma once

namespace gossamer::train {

double measure_peak_gflops(int d_model);

}  // namespace gossamer::train
