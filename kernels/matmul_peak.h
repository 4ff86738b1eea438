// The rate of an op table's own matrix product: GFLOP/s of matmul_forward (or, for bf16
// products, matmul_bf16_forward with its rounding of the input) on an n x n x n product of
// buffers in the table's memory, the median of three calls after a warm-up, each timed to
// completion (a one-float read-back completes after every op issued before it:
// core/memory_ops.h). The MFU peak of training runs whose buffers are not host memory or whose
// products are bf16 (the trainer: MFU against the peak of the products' own dtype) and of
// bench_cuda_train. Header-only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/buffer.h"
#include "core/timer.h"
#include "kernels/matmul_dtype.h"
#include "kernels/ops.h"

namespace gossamer::kernels {

inline double measure_matmul_gflops(const OpTable& ops, int n,
                                    MatmulDtype dtype = MatmulDtype::MATMUL_DTYPE_FP32) {
  const size_t elems = size_t(n) * size_t(n);
  Buffer<float> a(elems, *ops.memory), w(elems, *ops.memory), out(elems, *ops.memory);
  std::vector<float> host(elems);
  for (size_t i = 0; i < elems; ++i) host[i] = float(i % 17) * 0.01f;
  a.upload(host.data(), elems);
  w.upload(host.data(), elems);
  const bool bf16 = dtype == MatmulDtype::MATMUL_DTYPE_BF16;
  Buffer<uint16_t> w16(bf16 ? elems : 0, *ops.memory);
  Buffer<unsigned char> scratch(bf16 ? ops.matmul_bf16_scratch_bytes(n, n, n) : 0, *ops.memory);
  if (bf16) ops.to_bf16(w16.data(), w.data(), elems);
  std::vector<double> seconds;
  float probe = 0;
  for (int rep = 0; rep < 4; ++rep) {
    Stopwatch clock;
    if (bf16)
      ops.matmul_bf16_forward(out.data(), a.data(), w16.data(), nullptr, n, n, n, scratch.data());
    else
      ops.matmul_forward(out.data(), a.data(), w.data(), nullptr, n, n, n);
    out.download(&probe, 1);
    if (rep > 0) seconds.push_back(clock.seconds());
  }
  std::sort(seconds.begin(), seconds.end());
  return 2.0 * double(n) * double(n) * double(n) / seconds[1] / 1e9;
}

}  // namespace gossamer::kernels
