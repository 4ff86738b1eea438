// Peak measurement: best of several repeats of three shapes sized from d_model.
#include "train/peak_flops.h"

#include <algorithm>
#include <vector>

#include "core/buffer.h"
#include "core/timer.h"
#include "kernels/cpu/gemm.h"

namespace gossamer::train {

double measure_peak_gflops(int d_model) {
  const int C = std::max(256, d_model);
  const int M = 512;
  struct Shape { int m, n, k; };
  const std::vector<Shape> shapes = {{M, 4 * C, C}, {M, C, 4 * C}, {M, 3 * C, C}};
  size_t max_a = 0, max_b = 0, max_c = 0;
  for (const Shape& s : shapes) {
    max_a = std::max(max_a, size_t(s.m) * s.k);
    max_b = std::max(max_b, size_t(s.k) * s.n);
    max_c = std::max(max_c, size_t(s.m) * s.n);
  }
  HostBuffer<float> a(max_a), b(max_b), c(max_c);
  for (size_t i = 0; i < max_a; ++i) a[i] = float(i % 17) * 0.01f;
  for (size_t i = 0; i < max_b; ++i) b[i] = float(i % 13) * 0.01f;
  double best = 0;
  for (const Shape& s : shapes) {
    for (int rep = 0; rep < 6; ++rep) {
      Stopwatch w;
      kernels::cpu::gemm<float>(false, true, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.k,
                                0.0f, c.data(), s.n);
      const double sec = w.seconds();
      if (rep > 0) best = std::max(best, 2.0 * s.m * s.n * s.k / sec / 1e9);
    }
  }
  return best;
}

}  // namespace gossamer::train
