// Piece-wise moves between two buffers on the CPU, the reference of kernels/cuda/copy_runs.cuh:
// for each run r of runs[0 .. n_runs) (kernels/copy_run.h; destinations disjoint),
//   copy_runs:       dst[r.dst_offset + i] = src[r.src_offset + i]    for i < r.n
//   accumulate_runs: dst[r.dst_offset + i] += src[r.src_offset + i]   for i < r.n
// The runs are in the table's memory (here: host memory). OpenMP over the runs.
#pragma once

#include <cstddef>

#include "kernels/copy_run.h"

namespace gossamer::kernels::cpu {

template <class T>
void copy_runs(T* dst, const T* src, const CopyRun* runs, size_t n_runs);

template <class T>
void accumulate_runs(T* dst, const T* src, const CopyRun* runs, size_t n_runs);

}  // namespace gossamer::kernels::cpu
