// The table-driven op tests on CUDA: every GPT-2 and Llama op case (tests/unit/gpt2_op_cases.h,
// llama_op_cases.h), plus shapes that only matter on a GPU (C = 1025, more rows than one
// reduction block, a million elements, no matrix dimension a multiple of 4), and the matmul
// cases again with every buffer only 4-byte aligned (as parameter views can be), all run through
// the staged CUDA table (cuda_staged_ops.h) against the double CPU reference with the harness's
// checks (tolerances, NaN-prefilled outputs, "+=" gradients, inputs unchanged, a second run
// bitwise identical) and NaN guard bands on the device; the elementwise helpers on exactly
// representable data; every optimizer update (dense, SMET's blocks, SCAPE's indexed and
// from-momentum) against the CPU op. Without a GPU every test is SKIPPED (ctest label gpu
// reports the entry as skipped), never passed. That the table is complete is checked without
// a GPU by test_cuda_op_table.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda_staged_ops.h"
#include "gpt2_op_cases.h"
#include "llama_op_cases.h"
#include "op_test_harness.h"
#include "skip_without_gpu.h"

namespace {

using namespace gossamer::op_test;
using namespace gossamer::op_test::gpt2;
namespace llama = gossamer::op_test::llama;
using gossamer::Rng;
using gossamer::cuda_test::cuda_staged_ops;

std::vector<CaseEntry> cuda_cases() {
  // Every case of both grids (every op they call has a CUDA kernel).
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
  v.push_back(entry<MatmulCase>(600, 33, 70, true, true));    // dbias over three row slices
  // Attention's head sizes per lane count: 200 (8 dims a lane, over 48 KiB of shared memory),
  // 100 (4), both with T past a block's 16 rows and a tile's 32 keys.
  v.push_back(entry<AttentionCase>(2, 40, 400, 2));
  v.push_back(entry<llama::GqaAttentionCase>(2, 50, 6, 2, 100));
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

// add / accumulate / scale / axpy / axpby / nesterov_outer / sum_squares /
// accumulate_sum_squares on values k/16 (small k), with
// binary-fraction factors: every result is exact.
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
    Guarded<float> y = a, anchor = a, m = b;
    ops.axpy(y.data(), -0.75f, b.data(), n);
    ops.nesterov_outer(anchor.data(), m.data(), x.data(), 0.5f, 0.75f, n);  // delta = -0.75 a
    size_t wrong_axpy = 0, wrong_m = 0, wrong_anchor = 0;
    for (size_t k = 0; k < n; ++k) {
      wrong_axpy += y[k] != a[k] - 0.75f * b[k];
      const float mk = 0.75f * b[k] + x[k];
      wrong_m += m[k] != mk;
      wrong_anchor += anchor[k] != a[k] - 0.5f * (x[k] + 0.75f * mk);
    }
    EXPECT_EQ(wrong_axpy, 0u) << "axpy, n = " << n;
    EXPECT_EQ(wrong_m, 0u) << "nesterov_outer m, n = " << n;
    EXPECT_EQ(wrong_anchor, 0u) << "nesterov_outer anchor, n = " << n;
    EXPECT_TRUE(y.guards_intact() && anchor.guards_intact() && m.guards_intact());
    Guarded<float> z = a, acc = a;
    ops.axpby(z.data(), -0.75f, b.data(), 0.5f, n);
    double exact_acc = 0;
    for (size_t k = 0; k < n; ++k) exact_acc += double(a[k] + b[k]) * double(a[k] + b[k]);
    EXPECT_EQ(ops.accumulate_sum_squares(acc.data(), b.data(), n), exact_acc)
        << "accumulate_sum_squares, n = " << n;
    size_t wrong_axpby = 0, wrong_acc_sum = 0;
    for (size_t k = 0; k < n; ++k) {
      wrong_axpby += z[k] != 0.5f * a[k] - 0.75f * b[k];
      wrong_acc_sum += acc[k] != a[k] + b[k];
    }
    EXPECT_EQ(wrong_axpby, 0u) << "axpby, n = " << n;
    EXPECT_EQ(wrong_acc_sum, 0u) << "accumulate_sum_squares' sum, n = " << n;
    EXPECT_TRUE(z.guards_intact() && acc.guards_intact());
  }
}

// The block moves of dynamic sparse training (staged) against the CPU table, bit for bit:
// blocks of 16 of a matrix cut at 16 k + 5 (the cut block listed), lists of many blocks, in an
// order that is not sorted; and sum on exact data.
TEST(CudaBlockOps, MatchTheCpuBitForBit) {
  SKIP_WITHOUT_GPU();
  const auto cuda = cuda_staged_ops();
  const auto& cpu = gossamer::kernels::cpu_ops();
  for (size_t nb_total : {size_t{1}, size_t{300}, size_t{70001}}) {
    const size_t B = 16, n_x = (nb_total - 1) * B + 5;
    Rng rng(nb_total);
    std::vector<float> x(n_x), pre(nb_total * B);
    for (auto& v : x) v = float(rng.normal());
    for (auto& v : pre) v = float(int(rng.below(129)) - 64) / 16;
    std::vector<int32_t> blocks;
    for (size_t b = 0; b < nb_total; ++b)
      if (b + 1 == nb_total || rng.below(3) == 0) blocks.push_back(int32_t(b));
    for (size_t j = blocks.size(); j > 1; --j) std::swap(blocks[j - 1], blocks[rng.below(j)]);
    const size_t nb = blocks.size();
    std::vector<float> ca(pre.begin(), pre.begin() + ptrdiff_t(nb * B)), cb = ca, za = x, zb = x;
    cuda.accumulate_blocks(ca.data(), x.data(), blocks.data(), nb, B, n_x);
    cpu.accumulate_blocks(cb.data(), x.data(), blocks.data(), nb, B, n_x);
    cuda.zero_blocks(za.data(), blocks.data(), nb, B, n_x);
    cpu.zero_blocks(zb.data(), blocks.data(), nb, B, n_x);
    std::vector<double> la(nb, -1), lb(nb, -2);
    cuda.block_l1_norms(la.data(), x.data(), blocks.data(), nb, B, n_x);
    cpu.block_l1_norms(lb.data(), x.data(), blocks.data(), nb, B, n_x);
    EXPECT_EQ(std::memcmp(ca.data(), cb.data(), ca.size() * sizeof(float)), 0)
        << "accumulate_blocks, " << nb_total << " blocks";
    EXPECT_EQ(std::memcmp(za.data(), zb.data(), za.size() * sizeof(float)), 0)
        << "zero_blocks, " << nb_total << " blocks";
    EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(double)), 0)
        << "block_l1_norms, " << nb_total << " blocks";
    std::vector<int32_t> sa(nb), sb(nb);
    for (size_t j = 0; j < nb; ++j) sa[j] = sb[j] = int32_t(rng.below(9));
    cuda.increment_clamped(sa.data(), nb, 7);
    cpu.increment_clamped(sb.data(), nb, 7);
    EXPECT_EQ(sa, sb) << "increment_clamped";
    std::vector<int32_t> picks;  // every third count, in reverse order
    for (size_t j = nb; j-- > 0;)
      if (j % 3 == 0) picks.push_back(int32_t(j));
    cuda.assign_at(sa.data(), picks.data(), picks.size(), 1);
    cpu.assign_at(sb.data(), picks.data(), picks.size(), 1);
    EXPECT_EQ(sa, sb) << "assign_at";
    double exact = 0;
    for (float v : pre) exact += double(v);
    EXPECT_EQ(cuda.sum(pre.data(), pre.size()), exact) << "sum";
    // sum_squares_to: the bits of sum_squares (on inexact data too), left on the device.
    double to = -1;
    cuda.sum_squares_to(&to, x.data(), x.size());
    const double back = cuda.sum_squares(x.data(), x.size());
    EXPECT_EQ(std::memcmp(&to, &back, sizeof to), 0) << "sum_squares_to " << to << " vs " << back;
  }
}

// Attention on CUDA takes head sizes up to 256 and says so above.
TEST(CudaAttention, RefusesHeadsAbove256) {
  SKIP_WITHOUT_GPU();
  const int B = 1, T = 3, NH = 1, C = 257;  // the head size is checked before any launch
  try {
    gossamer::kernels::cuda::attention_forward(nullptr, nullptr, nullptr, B, T, C, NH, NH);
    ADD_FAILURE() << "head size 257 accepted";
  } catch (const gossamer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("head size 257"), std::string::npos) << e.what();
  }
  try {  // the backward too, before its first kernel (which would fault on these pointers)
    gossamer::kernels::cuda::attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr,
                                                nullptr, B, T, C, NH, NH);
    ADD_FAILURE() << "head size 257 accepted by the backward";
  } catch (const gossamer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("head size 257"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // nothing was launched on those pointers
}

// Piece-wise moves (staged) against the CPU table, bit for bit: 1, 300 and 70001 runs (past
// the grid's 65535 blocks) of 0 to 2000 elements, sources in shuffled order.
TEST(CudaCopyRuns, MatchTheCpuBitForBit) {
  SKIP_WITHOUT_GPU();
  const auto cuda = cuda_staged_ops();
  const auto& cpu = gossamer::kernels::cpu_ops();
  for (size_t n_runs : {size_t{1}, size_t{300}, size_t{70001}}) {
    Rng rng(n_runs);
    std::vector<gossamer::kernels::CopyRun> runs(n_runs);
    size_t dst_n = 0, src_n = 0;
    for (auto& r : runs) {
      r.n = n_runs > 1000 ? rng.below(40) : rng.below(2001);
      r.dst_offset = dst_n + rng.below(3);
      dst_n = r.dst_offset + r.n;
    }
    std::vector<size_t> order(n_runs);
    for (size_t j = 0; j < n_runs; ++j) order[j] = j;
    for (size_t j = n_runs; j > 1; --j) std::swap(order[j - 1], order[rng.below(j)]);
    for (size_t j : order) {
      runs[j].src_offset = src_n;
      src_n += runs[j].n;
    }
    std::vector<float> src(src_n), pre(dst_n);
    for (auto& v : src) v = float(rng.normal());
    for (auto& v : pre) v = float(rng.normal());
    std::vector<float> ca = pre, cb = pre, aa = pre, ab = pre;
    cuda.copy_runs(ca.data(), src.data(), runs.data(), n_runs);
    cpu.copy_runs(cb.data(), src.data(), runs.data(), n_runs);
    cuda.accumulate_runs(aa.data(), src.data(), runs.data(), n_runs);
    cpu.accumulate_runs(ab.data(), src.data(), runs.data(), n_runs);
    EXPECT_EQ(std::memcmp(ca.data(), cb.data(), ca.size() * sizeof(float)), 0)
        << "copy_runs, " << n_runs << " runs";
    EXPECT_EQ(std::memcmp(aa.data(), ab.data(), aa.size() * sizeof(float)), 0)
        << "accumulate_runs, " << n_runs << " runs";
  }
}

// Products with bf16 operands: the same rounded operands on both sides (the conversion is the
// CPU's bits, below), so only the fp32 summation order differs: every output within 2e-5 of the
// largest CPU value of its tensor, times K / 4096 for sums of K > 4096 terms (dinp sums over
// OC = 50257: an fp32 sum's rounding grows with its length, and tensor cores may accumulate
// with another rounding than the CPU's); shapes with no dimension a multiple of 8, one row, the
// GPT-2 vocabulary as OC, and every buffer only 4-byte aligned once.
TEST(CudaMatmulBf16, MatchesTheCpuOp) {
  SKIP_WITHOUT_GPU();
  const auto cuda = cuda_staged_ops();
  const auto& cpu = gossamer::kernels::cpu_ops();
  struct Shape {
    int N, C, OC;
    size_t offset;
  };
  for (const Shape s : {Shape{65, 1025, 257, 0}, Shape{1, 33, 70, 0}, Shape{37, 64, 50257, 0},
                        Shape{600, 96, 40, 0}, Shape{65, 1025, 257, 4}}) {
    gossamer::cuda_test::StageOffset offset(s.offset);
    Rng rng(uint64_t(s.N) * 7 + s.offset);
    const size_t nc = size_t(s.N) * s.C, oc_c = size_t(s.OC) * s.C, n_oc = size_t(s.N) * s.OC;
    auto normal = [&](size_t n) {
      std::vector<float> v(n);
      for (auto& x : v) x = float(rng.normal());
      return v;
    };
    const std::vector<float> inp = normal(nc), bias = normal(s.OC), dout = normal(n_oc),
                             w32 = normal(oc_c), pre_dinp = normal(nc), pre_dw = normal(oc_c),
                             pre_db = normal(s.OC);
    std::vector<uint16_t> w(oc_c);
    cpu.to_bf16(w.data(), w32.data(), oc_c);
    const std::string what = std::to_string(s.N) + "x" + std::to_string(s.C) + "x" +
                             std::to_string(s.OC) + (s.offset ? ", 4-byte aligned" : "");
    std::vector<unsigned char> scratch_a(cuda.matmul_bf16_scratch_bytes(s.N, s.C, s.OC));
    std::vector<unsigned char> scratch_b(cpu.matmul_bf16_scratch_bytes(s.N, s.C, s.OC));
    std::vector<float> out_a(n_oc, NAN), out_b(n_oc, NAN);
    cuda.matmul_bf16_forward(out_a.data(), inp.data(), w.data(), bias.data(), s.N, s.C, s.OC,
                             scratch_a.data());
    cpu.matmul_bf16_forward(out_b.data(), inp.data(), w.data(), bias.data(), s.N, s.C, s.OC,
                            scratch_b.data());
    std::vector<float> dinp_a = pre_dinp, dinp_b = pre_dinp, dw_a = pre_dw, dw_b = pre_dw,
                       db_a = pre_db, db_b = pre_db;
    cuda.matmul_bf16_backward(dinp_a.data(), dw_a.data(), db_a.data(), dout.data(), inp.data(),
                              w.data(), s.N, s.C, s.OC, scratch_a.data());
    cpu.matmul_bf16_backward(dinp_b.data(), dw_b.data(), db_b.data(), dout.data(), inp.data(),
                             w.data(), s.N, s.C, s.OC, scratch_b.data());
    struct Output {
      const char* name;
      const std::vector<float>*a, *b;
      int terms;  // the length of each output's sum
    };
    const Output outputs[] = {{"out", &out_a, &out_b, s.C},
                              {"dinp", &dinp_a, &dinp_b, s.OC},
                              {"dw", &dw_a, &dw_b, s.N},
                              {"dbias", &db_a, &db_b, s.N}};
    for (const Output& o : outputs) {
      const char* name = o.name;
      const std::pair<const std::vector<float>*, const std::vector<float>*> ab{o.a, o.b};
      const double length_factor = std::max(1.0, o.terms / 4096.0);
      double largest = 0, worst = 0;
      for (size_t i = 0; i < ab.second->size(); ++i) {
        largest = std::max(largest, std::fabs(double((*ab.second)[i])));
        const double d = std::fabs(double((*ab.first)[i]) - (*ab.second)[i]);
        if (!(d <= worst)) worst = d;  // NaN sticks: an unwritten (NaN-prefilled) output fails
      }
      EXPECT_LE(worst, 2e-5 * length_factor * largest) << name << ", " << what;
    }
  }
}

// bf16 conversions: bit for bit the CPU op's, on every bf16 pattern (widening) and on random
// bit patterns, exact ties and special values (narrowing), at sizes around the grid.
TEST(CudaElementwise, Bf16ConversionsMatchCpuBitForBit) {
  SKIP_WITHOUT_GPU();
  const auto cuda = cuda_staged_ops();
  const auto& cpu = gossamer::kernels::cpu_ops();
  Guarded<uint16_t> all(65536, 0);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  Guarded<float> wide(all.size(), 0.f);
  std::vector<float> wide_cpu(all.size());
  cuda.from_bf16(wide.data(), all.data(), all.size());
  cpu.from_bf16(wide_cpu.data(), all.data(), all.size());
  EXPECT_EQ(std::memcmp(wide.data(), wide_cpu.data(), all.size() * 4), 0) << "from_bf16";
  EXPECT_TRUE(wide.guards_intact());
  for (size_t n : {size_t{0}, size_t{1}, size_t{1025}, (size_t{1} << 20) + 3}) {
    Rng rng(n + 5);
    Guarded<float> x(n, 0.f);
    for (size_t k = 0; k < n; ++k) {
      uint32_t b = uint32_t(rng.next_u64());
      if (k % 2) b = (b & 0xffff0000u) | 0x8000u;  // an exact tie
      std::memcpy(&x[k], &b, 4);
    }
    if (n > 8) x[0] = INFINITY, x[1] = -0.f, x[2] = std::nanf(""), x[3] = 3.4e38f;
    Guarded<uint16_t> out(n, 0);
    std::vector<uint16_t> out_cpu(n);
    cuda.to_bf16(out.data(), x.data(), n);
    cpu.to_bf16(out_cpu.data(), x.data(), n);
    size_t wrong = 0;
    for (size_t k = 0; k < n; ++k) wrong += out[k] != out_cpu[k];
    EXPECT_EQ(wrong, 0u) << "to_bf16, n = " << n;
    EXPECT_TRUE(out.guards_intact());
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

// The largest difference of two float vectors relative to max(|a[k]|, 1% of max |a|): float
// arithmetic contracted differently (FMA) on the two sides must pass near zero crossings, a
// wrong formula must not.
double worst_relative(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e30;
  double scale = 0, w = 0;
  for (float x : a) scale = std::max(scale, std::fabs(double(x)));
  const double floor = std::max(0.01 * scale, 1e-30);
  for (size_t k = 0; k < a.size(); ++k)
    w = std::max(w, std::fabs(double(a[k]) - b[k]) / std::max(std::fabs(double(a[k])), floor));
  return w;
}

// k distinct values below n, in random order.
std::vector<uint32_t> distinct(Rng& rng, size_t k, size_t n) {
  std::vector<uint32_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = uint32_t(i);
  for (size_t i = 0; i < k; ++i) std::swap(all[i], all[i + rng.below(n - i)]);
  all.resize(k);
  return all;
}

std::vector<float> normals(Rng& rng, size_t n, double sigma) {
  std::vector<float> v(n);
  for (auto& x : v) x = float(sigma * rng.normal());
  return v;
}

// SMET's block-compact AdamW against the CPU op: blocks of the default size 16 with a partial
// last block, blocks not a multiple of a warp, one block of several 4096-element chunks (the
// CPU's dense-tensor split), a single partial block whose last chunks are empty, several
// multi-chunk blocks; both warm-up ramps, with steps before the warm-up ends so that
// ramp_restarted_only decides; with and without the per-block sums; each block at its own
// step count.
TEST(CudaOptimizer, BlockUpdatesMatchCpu) {
  SKIP_WITHOUT_GPU();
  const auto cuda = cuda_staged_ops();
  const auto& cpu = gossamer::kernels::cpu_ops();
  using gossamer::kernels::WarmupRamp;
  struct Shape {
    size_t n_param, B, n_blocks;
    WarmupRamp ramp;
    bool sums;
  };
  for (const Shape& sh : {Shape{16 * 100 + 7, 16, 40, WarmupRamp::MOMENTUM_INPLACE, true},
                          Shape{5500, 1000, 6, WarmupRamp::LR_RAMP, true},
                          Shape{70001, 70001, 1, WarmupRamp::NONE, true},
                          Shape{70001, 65536, 1, WarmupRamp::MOMENTUM_INPLACE, true},
                          Shape{25000, 9000, 3, WarmupRamp::LR_RAMP, true},
                          Shape{25000, 9000, 3, WarmupRamp::LR_RAMP, false},
                          Shape{100, 16, 0, WarmupRamp::NONE, true}}) {
    Rng rng(sh.n_param + sh.B);
    const size_t total_blocks = (sh.n_param + sh.B - 1) / sh.B;
    std::vector<int32_t> blocks;
    for (uint32_t b : distinct(rng, sh.n_blocks, total_blocks)) blocks.push_back(int32_t(b));
    // The partial last block always among them.
    const auto last_block = std::find(blocks.begin(), blocks.end(), int32_t(total_blocks - 1));
    if (!blocks.empty() && last_block == blocks.end()) blocks[0] = int32_t(total_blocks - 1);
    std::vector<int32_t> steps(sh.n_blocks);
    const size_t compact = sh.n_blocks * sh.B;
    std::vector<float> p = normals(rng, sh.n_param, 1.0), m = normals(rng, compact, 0.1),
                       v(compact), sq(sh.n_blocks, -1.0f);
    for (auto& x : v) x = float(0.01 * rng.uniform());
    auto p2 = p, m2 = m, v2 = v, sq2 = sq;
    for (int64_t t : {3, 5, 12}) {
      for (auto& s : steps) s = int32_t(1 + rng.below(uint64_t(t)));
      const std::vector<float> g = normals(rng, compact, 1.0);
      const gossamer::kernels::AdamStep hp{.lr = 1e-3f,
                                           .beta1 = 0.9f,
                                           .beta2 = 0.95f,
                                           .eps = 1e-8f,
                                           .weight_decay = t == 5 ? 0.0f : 0.1f,
                                           .t = t,
                                           .ramp = sh.ramp,
                                           .warmup_steps = 8,
                                           .ramp_restarted_only = t != 5};
      float* out = sh.sums ? sq.data() : nullptr;
      float* out2 = sh.sums ? sq2.data() : nullptr;
      cpu.adamw_update_blocks(p.data(), g.data(), m.data(), v.data(), blocks.data(), steps.data(),
                              sh.n_blocks, sh.B, sh.n_param, out, hp);
      cuda.adamw_update_blocks(p2.data(), g.data(), m2.data(), v2.data(), blocks.data(),
                               steps.data(), sh.n_blocks, sh.B, sh.n_param, out2, hp);
      // The sums add in another order, of changes that differ in their last bits.
      EXPECT_LE(worst_relative(sq, sq2), 1e-3) << "update_sq, B = " << sh.B << ", t = " << t;
    }
    EXPECT_LE(worst_relative(p, p2), 1e-5) << "param, B = " << sh.B;
    EXPECT_LE(worst_relative(m, m2), 1e-5) << "m, B = " << sh.B;
    EXPECT_LE(worst_relative(v, v2), 1e-5) << "v, B = " << sh.B;
  }
}

// SCAPE's indexed AdamS against the CPU op: every way of applying the accumulated gradient,
// the age normaliser, lazy decay, the normaliser's square kept / frozen / not kept, the
// direction written or not; coordinates last updated 1, 5 and 40 steps ago or never; four
// steps on the same state.
TEST(CudaOptimizer, IndexedUpdatesMatchCpu) {
  SKIP_WITHOUT_GPU();
  const auto cuda = cuda_staged_ops();
  const auto& cpu = gossamer::kernels::cpu_ops();
  using gossamer::kernels::Accumulated;
  struct Rule {
    Accumulated acc;
    bool restarts, age, lazy, den_sq, frozen, dir;
  };
  const Rule rules[] = {{Accumulated::ONE_GRADIENT, false, false, false, false, false, false},
                        {Accumulated::ONE_GRADIENT, false, true, true, true, false, true},
                        {Accumulated::GRADIENT_REPLAY, false, false, true, true, true, true},
                        {Accumulated::MOMENTUM_SUM, false, false, false, true, false, false},
                        {Accumulated::MOMENTUM_SUM, true, false, true, false, false, true}};
  const size_t n_state = 5000, n_param = 8000;
  for (size_t k : {size_t{0}, size_t{1}, size_t{1025}, size_t{4999}}) {
    for (const Rule& r : rules) {
      Rng rng(k * 7 + size_t(r.acc));
      std::vector<float> p = normals(rng, n_param, 1.0), m = normals(rng, n_state, 0.1);
      std::vector<float> last(n_state), den_sq(n_state), dir(n_param, 0.0f);
      std::vector<uint8_t> decay(n_state);
      for (size_t i = 0; i < n_state; ++i) {
        const int64_t ago[] = {-1, 1, 5, 40};
        const int64_t a = ago[rng.below(4)];
        last[i] = a < 0 ? -1.0f : float(100 - a);
        den_sq[i] = rng.below(5) == 0 ? 0.0f : float(0.01 * rng.uniform());
        decay[i] = uint8_t(rng.below(2));
      }
      auto p2 = p, m2 = m, last2 = last, den_sq2 = den_sq, dir2 = dir;
      for (int64_t t = 100; t <= 103; ++t) {
        const std::vector<uint32_t> idx = distinct(rng, k, n_state);
        const std::vector<uint32_t> pidx = distinct(rng, k, n_param);
        const std::vector<float> g = normals(rng, k, 1.0);
        const gossamer::kernels::AdamStep hp{.lr = 1e-3f,
                                             .beta1 = 0.9f,
                                             .beta2 = 0.95f,
                                             .eps = 1e-8f,
                                             .weight_decay = 0.1f,
                                             .t = t,
                                             .code_form = t != 102,
                                             .age_normaliser = r.age,
                                             .lazy_decay = r.lazy,
                                             .accumulated = r.acc,
                                             .momentum_restarts = r.restarts,
                                             .frozen_normaliser = r.frozen};
        const gossamer::kernels::IndexedAdamsState<float> st{
            .m = m.data(),
            .last = last.data(),
            .decay = decay.data(),
            .den_sq = r.den_sq ? den_sq.data() : nullptr,
            .dir = r.dir ? dir.data() : nullptr};
        const gossamer::kernels::IndexedAdamsState<float> st2{
            .m = m2.data(),
            .last = last2.data(),
            .decay = decay.data(),
            .den_sq = r.den_sq ? den_sq2.data() : nullptr,
            .dir = r.dir ? dir2.data() : nullptr};
        cpu.adams_update_indexed(p.data(), pidx.data(), idx.data(), g.data(), k, st, hp);
        cuda.adams_update_indexed(p2.data(), pidx.data(), idx.data(), g.data(), k, st2, hp);
      }
      const std::string what = "k = " + std::to_string(k) + ", rule " + std::to_string(&r - rules);
      EXPECT_LE(worst_relative(p, p2), 1e-5) << "param, " << what;
      EXPECT_LE(worst_relative(m, m2), 1e-5) << "m, " << what;
      EXPECT_EQ(last, last2) << "last, " << what;
      EXPECT_LE(worst_relative(den_sq, den_sq2), 1e-5) << "den_sq, " << what;
      EXPECT_LE(worst_relative(dir, dir2), 1e-5) << "dir, " << what;
    }
  }
}

// SCAPE's update from the owner's momentum against the CPU op: gaps of 1-6 steps, catch-up of
// one step and of up to four, weight decay on some coordinates.
TEST(CudaOptimizer, FromMomentumUpdatesMatchCpu) {
  SKIP_WITHOUT_GPU();
  const auto cuda = cuda_staged_ops();
  const auto& cpu = gossamer::kernels::cpu_ops();
  const size_t n_state = 3000, n_param = 6000;
  for (size_t k : {size_t{0}, size_t{1}, size_t{2999}}) {
    for (int catch_up : {1, 4}) {
      Rng rng(k + size_t(catch_up));
      std::vector<float> p = normals(rng, n_param, 1.0), m_last = normals(rng, n_state, 0.1);
      std::vector<float> last(n_state);
      std::vector<uint8_t> decay(n_state);
      for (size_t i = 0; i < n_state; ++i) {
        last[i] = float(50 - int64_t(1 + rng.below(6)));
        decay[i] = uint8_t(rng.below(2));
      }
      auto p2 = p, m_last2 = m_last, last2 = last;
      for (int64_t t = 50; t <= 52; ++t) {
        const std::vector<uint32_t> idx = distinct(rng, k, n_state);
        const std::vector<uint32_t> pidx = distinct(rng, k, n_param);
        const std::vector<float> m_now = normals(rng, k, 0.1);
        const gossamer::kernels::AdamStep hp{.lr = 1e-3f,
                                             .beta1 = 0.9f,
                                             .beta2 = 0.95f,
                                             .eps = 1e-8f,
                                             .weight_decay = 0.1f,
                                             .t = t,
                                             .code_form = t != 51,
                                             .catch_up_max = catch_up};
        cpu.adams_update_from_momentum(p.data(), pidx.data(), m_last.data(), last.data(),
                                       idx.data(), m_now.data(), decay.data(), k, hp);
        cuda.adams_update_from_momentum(p2.data(), pidx.data(), m_last2.data(), last2.data(),
                                        idx.data(), m_now.data(), decay.data(), k, hp);
      }
      const std::string what =
          "k = " + std::to_string(k) + ", catch_up_max " + std::to_string(catch_up);
      EXPECT_LE(worst_relative(p, p2), 1e-5) << "param, " << what;
      EXPECT_EQ(m_last, m_last2) << "m_last, " << what;
      EXPECT_EQ(last, last2) << "last, " << what;
    }
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
