// Table-driven tests of the ops the Llama model adds (kernels/cpu/{rmsnorm,rope,swiglu}.h,
// grouped-query attention in attention.h, the encoder without position embedding), called
// through the op tables (the cases and their grid: llama_op_cases.h, shared with the CUDA op
// test), with the shared driver of tests/unit/op_test_harness.h:
// finite-difference gradients on the double CPU table, the float backend under test (the CPU
// table) vs double, guard bands, unchanged inputs, NaN/Inf, "+=" on pre-filled gradients,
// assigned outputs fully written, bitwise determinism. The driver checks that each backward
// matches its forward; every case's check() also compares the forward with a naive long-double
// reference written from the header's formula (independently of the kernel's loop structure),
// so that a wrong forward (e.g. interleaved RoPE pairs, a wrong kv head) cannot pass with a
// matching backward. Direct tests at the end pin the RoPE convention with hand-computed numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/rng.h"
#include "kernels/ops.h"
#include "llama_op_cases.h"
#include "op_test_harness.h"

namespace {

using gossamer::Rng;
using namespace gossamer::op_test;
namespace kernels = gossamer::kernels;

using namespace gossamer::op_test::llama;

class LlamaOpTest : public ::testing::TestWithParam<CaseEntry> {};

TEST_P(LlamaOpTest, GradientsAndFloat) {
  auto c = GetParam().make();
  run_case(*c, kernels::cpu_ops());
}

INSTANTIATE_TEST_SUITE_P(LlamaOps, LlamaOpTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<CaseEntry>& info) {
                           return info.param.name;
                         });

// ---- direct checks ---------------------------------------------------------------------------

// rotate_half pairs element i with i + hs/2 (interleaved RoPE would pair i with i + 1).
// hs = 4, theta = 100: inv_freq = {1, 100^(-1/2) = 0.1}.
TEST(Rope, RotateHalfConventionByHand) {
  const Ops<double>& ops = kernels::cpu_ops_f64();
  const int hs = 4;
  // position 1, x = e_0: pair (0, 2) rotates by angle 1.
  std::vector<double> x = {0, 0, 0, 0, 1, 0, 0, 0};  // (B=1, T=2, hs), row 1 = e_0
  ops.rope_forward(x.data(), 1, 2, 1, hs, hs, 100.0);
  const double expect1[8] = {0, 0, 0, 0, std::cos(1.0), 0, std::sin(1.0), 0};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(x[i], expect1[i], 1e-15) << i;
  // position 2, x = e_1: pair (1, 3) rotates by angle 2 * 0.1.
  std::vector<double> y(12, 0.0);
  y[8 + 1] = 1;
  ops.rope_forward(y.data(), 1, 3, 1, hs, hs, 100.0);
  const double expect2[4] = {0, std::cos(0.2), 0, std::sin(0.2)};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[8 + i], expect2[i], 1e-15) << i;
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y[i], 0.0);
  // The backward undoes the forward (a rotation's inverse is its transpose).
  ops.rope_backward(y.data(), 1, 3, 1, hs, hs, 100.0);
  EXPECT_NEAR(y[9], 1.0, 1e-15);
  EXPECT_NEAR(y[11], 0.0, 1e-15);
}

// Position t of a multi-row buffer uses angle t (not b*T + t): batch rows are rotated alike.
TEST(Rope, EveryBatchRowUsesItsOwnPosition) {
  const int B = 3, T = 5, H = 2, hs = 8, stride = 24;
  Rng rng(5);
  std::vector<float> x(size_t(B) * T * stride);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < stride; ++c) {
      const float v = static_cast<float>(rng.normal());
      for (int b = 0; b < B; ++b) x[(size_t(b) * T + t) * stride + c] = v;
    }
  kernels::cpu_ops().rope_forward(x.data(), B, T, H, hs, stride, 10000.0);
  for (int b = 1; b < B; ++b)
    EXPECT_EQ(std::memcmp(&x[0], &x[size_t(b) * T * stride], sizeof(float) * T * stride), 0);
}

}  // namespace
