// Implementation of copy_runs.h: one OpenMP loop over the runs (dynamic: runs differ in size).
#include "kernels/cpu/copy_runs.h"

#include <cstring>

namespace gossamer::kernels::cpu {

namespace {
constexpr size_t kParallelMin = 8;  // runs below which we stay serial
}

template <class T>
void copy_runs(T* dst, const T* src, const CopyRun* runs, size_t n_runs) {
#pragma omp parallel for schedule(dynamic) if (n_runs >= kParallelMin)
  for (size_t j = 0; j < n_runs; ++j) {
    const CopyRun& r = runs[j];
    if (r.n) std::memcpy(dst + r.dst_offset, src + r.src_offset, r.n * sizeof(T));
  }
}

template <class T>
void accumulate_runs(T* dst, const T* src, const CopyRun* runs, size_t n_runs) {
#pragma omp parallel for schedule(dynamic) if (n_runs >= kParallelMin)
  for (size_t j = 0; j < n_runs; ++j) {
    T* d = dst + runs[j].dst_offset;
    const T* s = src + runs[j].src_offset;
    for (size_t i = 0, n = runs[j].n; i < n; ++i) d[i] += s[i];
  }
}

template void copy_runs<float>(float*, const float*, const CopyRun*, size_t);
template void copy_runs<double>(double*, const double*, const CopyRun*, size_t);
template void accumulate_runs<float>(float*, const float*, const CopyRun*, size_t);
template void accumulate_runs<double>(double*, const double*, const CopyRun*, size_t);

}  // namespace gossamer::kernels::cpu
