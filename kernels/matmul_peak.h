// The rate of an op table's own matrix product: GFLOP/s of matmul_forward on an n x n x n
// product of buffers in the table's memory, the median of three calls after a warm-up, each
// timed to completion (a one-float read-back completes after every op issued before it:
// core/memory_ops.h). The MFU peak of training runs whose buffers are not host memory (the
// trainer) and of bench_cuda_train. Header-only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/buffer.h"
#include "core/timer.h"
#include "kernels/ops.h"

namespace gossamer::kernels {

inline double measure_matmul_gflops(const OpTable& ops, int n) {
  const size_t elems = size_t(n) * size_t(n);
  Buffer<float> a(elems, *ops.memory), w(elems, *ops.memory), out(elems, *ops.memory);
  std::vector<float> host(elems);
  for (size_t i = 0; i < elems; ++i) host[i] = float(i % 17) * 0.01f;
  a.upload(host.data(), elems);
  w.upload(host.data(), elems);
  std::vector<double> seconds;
  float probe = 0;
  for (int rep = 0; rep < 4; ++rep) {
    Stopwatch clock;
    ops.matmul_forward(out.data(), a.data(), w.data(), nullptr, n, n, n);
    out.download(&probe, 1);
    if (rep > 0) seconds.push_back(clock.seconds());
  }
  std::sort(seconds.begin(), seconds.end());
  return 2.0 * double(n) * double(n) * double(n) / seconds[1] / 1e9;
}

}  // namespace gossamer::kernels
