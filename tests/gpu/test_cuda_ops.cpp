// The table-driven op tests on CUDA: every GPT-2 and Llama op case (tests/unit/gpt2_op_cases.h,
// llama_op_cases.h), plus shapes that only matter on a GPU (C = 1025, more rows than one
// reduction block, a million elements, no matrix dimension a multiple of 4), and the matmul
// cases again with every buffer only 4-byte aligned (as parameter views can be), all run through
// the staged CUDA table (cuda_staged_ops.h) against the double CPU reference with the harness's
// checks (tolerances, NaN-prefilled outputs, "+=" gradients, inputs unchanged, a second run
// bitwise identical) and NaN guard bands on the device; the elementwise helpers on exactly
// representable data; the dense optimizer updates against the CPU ops. Without a GPU every test
// is SKIPPED (ctest label gpu reports the entry as skipped), never passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_staged_ops.h"
#include "gpt2_op_cases.h"
#include "llama_op_cases.h"
#include "op_test_harness.h"

namespace {

using namespace gossamer::op_test;
using namespace gossamer::op_test::gpt2;
namespace llama = gossamer::op_test::llama;
using gossamer::Rng;
using gossamer::cuda_test::cuda_staged_ops;
using gossamer::cuda_test::visible_gpus;

#define SKIP_WITHOUT_GPU() \
  if (visible_gpus() == 0) GTEST_SKIP() << "no GPU visible (cudaGetDeviceCount)"

std::vector<CaseEntry> cuda_cases() {
  // Every case of both grids: every op they call has a CUDA kernel (the staged table leaves
  // only the sparse optimizer updates unset, and no case calls those).
  std::vector<CaseEntry> v = all_cases();
  for (auto& e : llama::all_cases()) v.push_back(e);
  v.push_back(entry<EncoderCase>(2, 65, 1025, 300, 70));  // C = 1025, T not a multiple of 64
  v.push_back(entry<LayerNormCase>(1, 1025));
  v.push_back(entry<LayerNormCase>(300, 1025));  // two partial blocks of the dw/db reduction
  v.push_back(entry<GeluCase>((1 << 20) + 3, false));
  v.push_back(entry<llama::RmsNormCase>(300, 1025, 5));  // two partial blocks of the dw reduction
  v.push_back(entry<llama::SwigluCase>(300, 1025));
  v.push_back(entry<AttentionCase>(1, 129, 128, 2));  // rows longer than four warps' strides
  v.push_back(entry<MatmulCase>(65, 1025, 257, true, true));  // no dimension a multiple of 4
  return v;
}

class CudaOpTest : public ::testing::TestWithParam<CaseEntry> {};

TEST_P(CudaOpTest, MatchesDoubleReference) {
  SKIP_WITHOUT_GPU();
  auto c = GetParam().make();
  run_case(*c, cuda_staged_ops());
}

INSTANTIATE_TEST_SUITE_P(CudaOps, CudaOpTest, ::testing::ValuesIn(cuda_cases()),
                         [](const ::testing::TestParamInfo<CaseEntry>& info) {
                           return info.param.name;
                         });

// cuBLASLt with operands that are only 4-byte aligned: the matmul cases with every staged buffer
// offset by 4 bytes.
std::vector<CaseEntry> matmul_cases() {
  std::vector<CaseEntry> v;
  for (auto& e : cuda_cases())
    if (e.name.rfind("matmul_", 0) == 0) v.push_back(e);
  return v;
}

class CudaMisalignedMatmulTest : public ::testing::TestWithParam<CaseEntry> {};

TEST_P(CudaMisalignedMatmulTest, MatchesDoubleReference) {
  SKIP_WITHOUT_GPU();
  auto c = GetParam().make();
  gossamer::cuda_test::StageOffset offset(4);
  run_case(*c, cuda_staged_ops());
}

INSTANTIATE_TEST_SUITE_P(CudaMisalignedMatmul, CudaMisalignedMatmulTest,
                         ::testing::ValuesIn(matmul_cases()),
                         [](const ::testing::TestParamInfo<CaseEntry>& info) {
                           return info.param.name;
                         });

// add / accumulate / scale / sum_squares on values k/16 (small k): every result is exact.
TEST(CudaElementwise, Exact) {
  SKIP_WITHOUT_GPU();
  const auto ops = cuda_staged_ops();
  for (size_t n :
       {size_t{0}, size_t{1}, size_t{7}, size_t{1025}, size_t{70001}, (size_t{1} << 22) + 5}) {
    Rng rng(n + 1);
    Guarded<float> a(n, 0.f), b(n, 0.f);
    for (size_t k = 0; k < n; ++k) {
      a[k] = float(int(rng.below(129)) - 64) / 16;
      b[k] = float(int(rng.below(129)) - 64) / 16;
    }
    Guarded<float> out(n, std::nanf("")), dst = a, x = a;
    ops.add(out.data(), a.data(), b.data(), n);
    ops.accumulate(dst.data(), b.data(), n);
    ops.scale(x.data(), -0.75f, n);
    size_t wrong_add = 0, wrong_acc = 0, wrong_scale = 0;
    double exact = 0;
    for (size_t k = 0; k < n; ++k) {
      wrong_add += out[k] != a[k] + b[k];
      wrong_acc += dst[k] != a[k] + b[k];
      wrong_scale += x[k] != a[k] * -0.75f;
      exact += double(a[k]) * double(a[k]);
    }
    EXPECT_EQ(wrong_add, 0u) << "add, n = " << n;
    EXPECT_EQ(wrong_acc, 0u) << "accumulate, n = " << n;
    EXPECT_EQ(wrong_scale, 0u) << "scale, n = " << n;
    EXPECT_EQ(ops.sum_squares(a.data(), n), exact) << "sum_squares, n = " << n;
    EXPECT_TRUE(out.guards_intact() && dst.guards_intact() && x.guards_intact());
  }
}

// The dense optimizer updates against the CPU float op, four steps from random state (float
// arithmetic in a different order and contraction: relative agreement, not bits).
TEST(CudaOptimizer, DenseUpdatesMatchCpu) {
  SKIP_WITHOUT_GPU();
  const auto cuda = cuda_staged_ops();
  const auto& cpu = gossamer::kernels::cpu_ops();
  for (size_t n : {size_t{0}, size_t{1}, size_t{1025}, size_t{70001}}) {
    Rng rng(n + 3);
    std::vector<float> p(n), g(n), m(n), v(n);
    for (size_t k = 0; k < n; ++k) {
      p[k] = float(rng.normal());
      m[k] = float(0.1 * rng.normal());
      v[k] = float(0.01 * rng.uniform());
    }
    auto p2 = p, m2 = m, v2 = v, pa = p, ma = m, pa2 = p, ma2 = m;
    for (int64_t t = 1; t <= 4; ++t) {
      for (auto& x : g) x = float(rng.normal());
      // Steps 3-4: AdamS's paper form (c = 1) and no weight decay.
      const gossamer::kernels::AdamStep hp{.lr = 1e-3f,
                                           .beta1 = 0.9f,
                                           .beta2 = 0.95f,
                                           .eps = 1e-8f,
                                           .weight_decay = t <= 2 ? 0.1f : 0.0f,
                                           .t = t,
                                           .code_form = t <= 2};
      cpu.adamw_update(p.data(), g.data(), m.data(), v.data(), n, hp);
      cuda.adamw_update(p2.data(), g.data(), m2.data(), v2.data(), n, hp);
      cpu.adams_update(pa.data(), g.data(), ma.data(), n, hp);
      cuda.adams_update(pa2.data(), g.data(), ma2.data(), n, hp);
    }
    auto worst = [](const std::vector<float>& a, const std::vector<float>& b) {
      double w = 0;
      for (size_t k = 0; k < a.size(); ++k)
        w = std::max(w, std::fabs(double(a[k]) - b[k]) / (std::fabs(double(a[k])) + 1e-3));
      return w;
    };
    EXPECT_LE(worst(p, p2), 1e-5) << "adamw param, n = " << n;
    EXPECT_LE(worst(m, m2), 1e-5) << "adamw m, n = " << n;
    EXPECT_LE(worst(v, v2), 1e-5) << "adamw v, n = " << n;
    EXPECT_LE(worst(pa, pa2), 1e-5) << "adams param, n = " << n;
    EXPECT_LE(worst(ma, ma2), 1e-5) << "adams m, n = " << n;
  }
}

// The same inputs give the same bits (the reduction order is fixed by n alone).
TEST(CudaElementwise, SumSquaresDeterministic) {
  SKIP_WITHOUT_GPU();
  const auto ops = cuda_staged_ops();
  const size_t n = (size_t{1} << 22) + 3;
  Guarded<float> x(n, 0.f);
  Rng rng(11);
  long double ref = 0;
  for (size_t k = 0; k < n; ++k) {
    x[k] = static_cast<float>(rng.normal());
    ref += static_cast<long double>(x[k]) * x[k];
  }
  const double s = ops.sum_squares(x.data(), n);
  EXPECT_NEAR(s / double(ref), 1.0, 1e-10);
  for (int rep = 0; rep < 3; ++rep) EXPECT_EQ(ops.sum_squares(x.data(), n), s);
}

}  // namespace
