// CUDA versions of kernels/cpu/copy_runs.h (piece-wise copy and accumulate between two buffers,
// the runs in device memory): a grid-stride loop over the runs, a block per run at a time, its
// threads over the run's elements. Each element written once: exact, deterministic, the CPU
// op's results bit for bit. Device pointers, cuda_context's stream().
#pragma once

#include <cstddef>

#include "kernels/copy_run.h"

namespace gossamer::kernels::cuda {

void copy_runs(float* dst, const float* src, const CopyRun* runs, size_t n_runs);
void accumulate_runs(float* dst, const float* src, const CopyRun* runs, size_t n_runs);

}  // namespace gossamer::kernels::cuda
