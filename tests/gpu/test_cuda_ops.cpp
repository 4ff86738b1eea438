// The table-driven op tests on CUDA: the GPT-2 and Llama op cases (tests/unit/gpt2_op_cases.h,
// llama_op_cases.h) of every op that has a CUDA kernel, plus shapes that only matter on a GPU (C =
// 1025, more rows than one reduction block, a million elements), run through the staged CUDA table
// (cuda_staged_ops.h) against the double CPU reference, with the harness's checks (tolerances,
// NaN-prefilled outputs, "+=" gradients, inputs unchanged, a second run bitwise identical) and
// device guard bands; and the elementwise helpers on exactly representable data. Without a GPU
// every test is SKIPPED (ctest label gpu reports it as skipped), never passed.
#include <gtest/gtest.h>

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

// The ops with a CUDA kernel today, by case name prefix.
bool on_cuda(const std::string& name) {
  for (const char* op : {"encoder_", "layernorm_", "gelu_", "rmsnorm_", "rope_", "swiglu_"})
    if (name.rfind(op, 0) == 0) return true;
  return false;
}

std::vector<CaseEntry> cuda_cases() {
  std::vector<CaseEntry> v;
  for (auto& e : all_cases())
    if (on_cuda(e.name)) v.push_back(e);
  for (auto& e : llama::all_cases())
    if (on_cuda(e.name)) v.push_back(e);
  v.push_back(entry<EncoderCase>(2, 65, 1025, 300, 70));  // C = 1025, T not a multiple of 64
  v.push_back(entry<LayerNormCase>(1, 1025));
  v.push_back(entry<LayerNormCase>(300, 1025));  // two partial blocks of the dw/db reduction
  v.push_back(entry<GeluCase>((1 << 20) + 3, false));
  v.push_back(entry<llama::RmsNormCase>(300, 1025, 5));  // two partial blocks of the dw reduction
  v.push_back(entry<llama::SwigluCase>(300, 1025));
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
