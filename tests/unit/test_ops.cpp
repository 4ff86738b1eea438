// Table-driven tests of the GPT-2 ops (kernels/cpu/*.h), after ggml's test-backend-ops.
// Each op is an OpCase subclass (build(): inputs, outputs, loss weights; forward()/backward()
// through an op table, for float and double), instantiated over a grid of awkward shapes
// (both in gpt2_op_cases.h, shared with the CUDA op test, tests/gpu/test_cuda_ops.cpp). For
// every case the driver
//   1. runs forward + backward on the double CPU table (the reference) and checks every
//      gradient (inputs, weights, biases) against central finite differences of
//      L = sum_j <out_j, R_j> (fixed random R_j);
//   2. runs the float backend under test (the CPU table, kernels::cpu_ops()) and compares every
//      output and gradient with double (relative error with the tensor's RMS as floor, per-op
//      tolerance);
//   3. checks: sentinel guard bands around every buffer are untouched, inputs are unchanged,
//      no NaN/Inf anywhere in outputs and gradients, assigned outputs are fully written
//      (pre-filled with NaN), "+=" gradients add to pre-filled nonzero values, a second float
//      run is bitwise identical, plus per-op invariants (causal zeros, padded columns).
// The elementwise helpers have no backward; they get exact checks through the tables at the end
// of the file, with the check that the CPU tables set every entry.
// The driver is shared with the other op tests: tests/unit/op_test_harness.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "gpt2_op_cases.h"
#include "kernels/ops.h"
#include "op_test_harness.h"

namespace {

using gossamer::Rng;
using namespace gossamer::op_test;
namespace cpu = gossamer::kernels::cpu;
namespace kernels = gossamer::kernels;

using namespace gossamer::op_test::gpt2;

class OpTest : public ::testing::TestWithParam<CaseEntry> {};

TEST_P(OpTest, GradientsAndFloat) {
  auto c = GetParam().make();
  run_case(*c, kernels::cpu_ops());
}

INSTANTIATE_TEST_SUITE_P(Ops, OpTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<CaseEntry>& info) {
                           return info.param.name;
                         });

// ---- direct checks ---------------------------------------------------------------------------

// gelu_forward evaluates through sigmoid(2u); it must agree with the header's tanh formula.
TEST(Gelu, MatchesTanhFormula) {
  const size_t n = 2001;
  Guarded<double> x(n, 0.0), y(n, 0.0);
  for (size_t k = 0; k < n; ++k) x[k] = -10.0 + 20.0 * double(k) / (n - 1);
  kernels::cpu_ops_f64().gelu_forward(y.data(), x.data(), n);
  for (size_t k = 0; k < n; ++k) {
    const long double v = x[k];
    const long double ref =
        0.5L * v * (1.0L + std::tanh(0.7978845608028654L * (v + 0.044715L * v * v * v)));
    // Both are double evaluations of the same function: agreement to a few ulp of max(|y|, 1).
    EXPECT_NEAR(y[k], static_cast<double>(ref), 1e-14) << "x = " << x[k];
  }
  EXPECT_TRUE(x.guards_intact() && y.guards_intact());
}

const size_t kSizes[] = {0, 1, 7, 37, 1025, 70001};  // 70001 takes the multi-threaded path

// Values k/16 with small integer k: sums, products and squares are exact in float and double.
template <class T>
Guarded<T> exact_values(size_t n, uint64_t seed) {
  Rng rng(seed);
  Guarded<T> g(n, T(0));
  for (size_t k = 0; k < n; ++k) g[k] = static_cast<T>(int(rng.below(129)) - 64) / T(16);
  return g;
}

template <class T>
void check_elementwise(const Ops<T>& ops) {
  for (size_t n : kSizes) {
    const Guarded<T> a = exact_values<T>(n, 1), b = exact_values<T>(n, 2);
    size_t wrong = 0;
    // add, out separate / aliasing a / aliasing b
    for (int mode = 0; mode < 3; ++mode) {
      Guarded<T> out =
          mode == 0 ? Guarded<T>(n, std::numeric_limits<T>::quiet_NaN()) : (mode == 1 ? a : b);
      Guarded<T> a2 = a, b2 = b;
      const T* pa = mode == 1 ? out.data() : a2.data();
      const T* pb = mode == 2 ? out.data() : b2.data();
      ops.add(out.data(), pa, pb, n);
      for (size_t k = 0; k < n; ++k) wrong += out[k] != a[k] + b[k];
      EXPECT_TRUE(out.guards_intact() && a2.guards_intact() && b2.guards_intact());
    }
    EXPECT_EQ(wrong, 0u) << "add, n = " << n;
    Guarded<T> dst = a;
    ops.accumulate(dst.data(), b.data(), n);
    wrong = 0;
    for (size_t k = 0; k < n; ++k) wrong += dst[k] != a[k] + b[k];
    EXPECT_EQ(wrong, 0u) << "accumulate, n = " << n;
    EXPECT_TRUE(dst.guards_intact());
    Guarded<T> x = a;
    ops.scale(x.data(), T(-0.75), n);
    wrong = 0;
    for (size_t k = 0; k < n; ++k) wrong += x[k] != a[k] * T(-0.75);
    EXPECT_EQ(wrong, 0u) << "scale, n = " << n;
    EXPECT_TRUE(x.guards_intact());
    Guarded<T> y = a;
    ops.axpy(y.data(), T(-0.75), b.data(), n);
    wrong = 0;
    for (size_t k = 0; k < n; ++k) wrong += y[k] != a[k] - T(0.75) * b[k];
    EXPECT_EQ(wrong, 0u) << "axpy, n = " << n;
    EXPECT_TRUE(y.guards_intact());
    Guarded<T> z = a;
    ops.axpby(z.data(), T(-0.75), b.data(), T(0.5), n);
    wrong = 0;
    for (size_t k = 0; k < n; ++k) wrong += z[k] != T(0.5) * a[k] - T(0.75) * b[k];
    EXPECT_EQ(wrong, 0u) << "axpby, n = " << n;
    EXPECT_TRUE(z.guards_intact());
    // The outer Nesterov step: lr and mu are binary fractions, every value exact.
    Guarded<T> anchor = a, m = b;
    const Guarded<T> delta = exact_values<T>(n, 3);
    ops.nesterov_outer(anchor.data(), m.data(), delta.data(), T(0.5), T(0.75), n);
    size_t wrong_m = 0, wrong_anchor = 0;
    for (size_t k = 0; k < n; ++k) {
      const T mk = T(0.75) * b[k] + delta[k];
      wrong_m += m[k] != mk;
      wrong_anchor += anchor[k] != a[k] - T(0.5) * (delta[k] + T(0.75) * mk);
    }
    EXPECT_EQ(wrong_m, 0u) << "nesterov_outer m, n = " << n;
    EXPECT_EQ(wrong_anchor, 0u) << "nesterov_outer anchor, n = " << n;
    EXPECT_TRUE(anchor.guards_intact() && m.guards_intact());
    // sum_squares: every term and partial sum is a multiple of 1/256 below 2^30: exact.
    double exact = 0;
    for (size_t k = 0; k < n; ++k) exact += double(a[k]) * double(a[k]);
    EXPECT_EQ(ops.sum_squares(a.data(), n), exact) << "sum_squares, n = " << n;
    Guarded<double> to(1, -1.0);
    ops.sum_squares_to(to.data(), a.data(), n);
    EXPECT_EQ(to[0], exact) << "sum_squares_to, n = " << n;
    EXPECT_TRUE(to.guards_intact());
    double exact_sum = 0;
    for (size_t k = 0; k < n; ++k) exact_sum += double(a[k]);
    EXPECT_EQ(ops.sum(a.data(), n), exact_sum) << "sum, n = " << n;
    // accumulate_sum_squares: y += b, and the squares of the new y, exact the same way.
    Guarded<T> acc = a;
    double exact_acc = 0;
    for (size_t k = 0; k < n; ++k) exact_acc += double(a[k] + b[k]) * double(a[k] + b[k]);
    EXPECT_EQ(ops.accumulate_sum_squares(acc.data(), b.data(), n), exact_acc)
        << "accumulate_sum_squares, n = " << n;
    wrong = 0;
    for (size_t k = 0; k < n; ++k) wrong += acc[k] != a[k] + b[k];
    EXPECT_EQ(wrong, 0u) << "accumulate_sum_squares' sum, n = " << n;
    EXPECT_TRUE(acc.guards_intact());
  }
}

TEST(Elementwise, ExactFloat) {
  check_elementwise(kernels::cpu_ops());
}
TEST(Elementwise, ExactDouble) {
  check_elementwise(kernels::cpu_ops_f64());
}

// SCAPE's selection ops: gather / scatter / scale_at at distinct random indices, the mask score
// and the age bonus on exact values (binary fractions), and top-k against a sort with the tie
// rule, for both tables.
template <class T>
void check_sparse_select(const Ops<T>& ops) {
  for (size_t n : kSizes) {
    Rng rng(n + 11);
    const Guarded<T> a = exact_values<T>(n, 4), b = exact_values<T>(n, 5);
    // Every other index, shuffled: distinct, unsorted.
    std::vector<uint32_t> idx;
    for (size_t i = 0; i < n; i += 2) idx.push_back(uint32_t(i));
    for (size_t j = idx.size(); j > 1; --j) std::swap(idx[j - 1], idx[rng.below(uint32_t(j))]);
    const size_t k = idx.size();
    Guarded<T> out(k, std::numeric_limits<T>::quiet_NaN());
    ops.gather(out.data(), a.data(), idx.data(), k);
    size_t wrong = 0;
    for (size_t j = 0; j < k; ++j) wrong += out[j] != a[idx[j]];
    EXPECT_EQ(wrong, 0u) << "gather, n = " << n;
    Guarded<T> x = a;
    ops.scatter(x.data(), b.data(), idx.data(), k);  // b's first k values
    std::vector<T> want(a.data(), a.data() + n);
    for (size_t j = 0; j < k; ++j) want[idx[j]] = b[j];
    wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += x[i] != want[i];
    EXPECT_EQ(wrong, 0u) << "scatter, n = " << n;
    Guarded<T> y = a;
    if (n > 0) y[0] = std::numeric_limits<T>::quiet_NaN();  // index 0 is listed: zeroed below
    ops.scale_at(y.data(), idx.data(), k, T(0));
    Guarded<T> h = a;
    ops.scale_at(h.data(), idx.data(), k, T(-0.5));
    size_t wrong_zero = 0, wrong_half = 0;
    for (size_t i = 0; i < n; ++i) {
      const bool listed = i % 2 == 0;
      wrong_zero += listed ? !(y[i] == T(0) && !std::signbit(y[i])) : y[i] != a[i];
      wrong_half += h[i] != (listed ? T(-0.5) * a[i] : a[i]);
    }
    EXPECT_EQ(wrong_zero, 0u) << "scale_at 0, n = " << n;
    EXPECT_EQ(wrong_half, 0u) << "scale_at -0.5, n = " << n;
    // mask_score with and without y, then the age bonus with last steps 0..7 at step 5.
    Guarded<T> sc(n, std::numeric_limits<T>::quiet_NaN()),
        sx(n, std::numeric_limits<T>::quiet_NaN());
    ops.mask_score(sc.data(), T(0.75), a.data(), T(-2), b.data(), n);
    ops.mask_score(sx.data(), T(1), a.data(), T(3), nullptr, n);
    std::vector<float> last(n);
    for (size_t i = 0; i < n; ++i) last[i] = float(i % 8);
    Guarded<T> aged = sc;
    ops.age_bonus(aged.data(), last.data(), T(0.25), T(5), n);
    size_t wrong_score = 0, wrong_abs = 0, wrong_age = 0;
    for (size_t i = 0; i < n; ++i) {
      wrong_score += sc[i] != std::fabs(T(0.75) * a[i] - T(2) * b[i]);
      wrong_abs += sx[i] != std::fabs(a[i]);
      wrong_age += aged[i] != sc[i] * (T(1) + T(0.25) * std::max(T(0), T(5) - T(i % 8)));
    }
    EXPECT_EQ(wrong_score, 0u) << "mask_score, n = " << n;
    EXPECT_EQ(wrong_abs, 0u) << "mask_score without y, n = " << n;
    EXPECT_EQ(wrong_age, 0u) << "age_bonus, n = " << n;
    EXPECT_TRUE(out.guards_intact() && x.guards_intact() && y.guards_intact() &&
                h.guards_intact() && sc.guards_intact() && sx.guards_intact() &&
                aged.guards_intact());
    // top-k of values with many ties (1/16 steps), a NaN and a -0: the indices of a stable
    // sort by decreasing value (NaN last, -0 == +0), the first k of them sorted.
    Guarded<T> keys = a;
    if (n > 3) keys[1] = std::numeric_limits<T>::quiet_NaN(), keys[2] = T(-0.0), keys[3] = T(0);
    std::vector<uint32_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = uint32_t(i);
    auto key = [&](uint32_t i) {
      return keys[i] != keys[i] ? -std::numeric_limits<T>::infinity() : keys[i];
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t p, uint32_t q) { return key(p) > key(q); });
    for (size_t kk : {size_t(0), n / 3, n}) {
      Guarded<uint32_t> got(kk, 0xffffffffu);
      ops.top_k_indices(keys.data(), n, kk, got.data());
      std::vector<uint32_t> expect(order.begin(), order.begin() + ptrdiff_t(kk));
      std::sort(expect.begin(), expect.end());
      EXPECT_EQ(std::vector<uint32_t>(got.data(), got.data() + kk), expect)
          << "top_k_indices, n = " << n << ", k = " << kk;
      EXPECT_TRUE(got.guards_intact());
    }
  }
}

TEST(SparseSelect, ExactFloat) {
  check_sparse_select(kernels::cpu_ops());
}
TEST(SparseSelect, ExactDouble) {
  check_sparse_select(kernels::cpu_ops_f64());
}

TEST(SparseSelect, TopKRejectsKAboveN) {
  const float scores[3] = {1, 2, 3};
  uint32_t out[4];
  EXPECT_THROW(kernels::cpu_ops().top_k_indices(scores, 3, 4, out), gossamer::Error);
}

// The block moves of dynamic sparse training on a matrix of 165 elements in blocks of 16 (the
// last block cut to 5), a list that holds the cut block, on exact values.
template <class T>
void check_block_ops(const Ops<T>& ops) {
  const size_t B = 16, n_x = 165;
  const int32_t blocks[] = {10, 3, 0, 7};
  const size_t nb = 4;
  const auto elements = [&](int32_t b) { return std::min(B, n_x - size_t(b) * B); };
  const Guarded<T> x = exact_values<T>(n_x, 6), pre = exact_values<T>(nb * B, 7);
  Guarded<T> compact = pre;
  ops.accumulate_blocks(compact.data(), x.data(), blocks, nb, B, n_x);
  size_t wrong = 0;
  for (size_t j = 0; j < nb; ++j)
    for (size_t i = 0; i < B; ++i)
      wrong += compact[j * B + i] != (i < elements(blocks[j])
                                          ? pre[j * B + i] + x[size_t(blocks[j]) * B + i]
                                          : pre[j * B + i]);
  EXPECT_EQ(wrong, 0u) << "accumulate_blocks";
  Guarded<T> z = x;
  ops.zero_blocks(z.data(), blocks, nb, B, n_x);
  wrong = 0;
  for (size_t e = 0; e < n_x; ++e) {
    const int32_t b = int32_t(e / B);
    const bool listed = std::find(blocks, blocks + nb, b) != blocks + nb;
    wrong += z[e] != (listed ? T(0) : x[e]);
  }
  EXPECT_EQ(wrong, 0u) << "zero_blocks";
  Guarded<double> l1(nb, -1.0);
  ops.block_l1_norms(l1.data(), x.data(), blocks, nb, B, n_x);
  wrong = 0;
  for (size_t j = 0; j < nb; ++j) {
    double want = 0;
    for (size_t i = 0; i < elements(blocks[j]); ++i)
      want += std::fabs(double(x[size_t(blocks[j]) * B + i]));
    wrong += l1[j] != want;
  }
  EXPECT_EQ(wrong, 0u) << "block_l1_norms";
  Guarded<int32_t> steps(4, 0);
  steps[0] = 0, steps[1] = 5, steps[2] = 6, steps[3] = 7;
  ops.increment_clamped(steps.data(), 4, 7);
  EXPECT_TRUE(steps[0] == 1 && steps[1] == 6 && steps[2] == 7 && steps[3] == 7) << "increment";
  const int32_t restarted[] = {3, 1};
  ops.assign_at(steps.data(), restarted, 2, -4);
  EXPECT_TRUE(steps[0] == 1 && steps[1] == -4 && steps[2] == 7 && steps[3] == -4) << "assign_at";
  ops.assign_at(steps.data(), restarted, 0, 9);  // an empty list writes nothing
  EXPECT_TRUE(steps[1] == -4 && steps[3] == -4) << "assign_at, k = 0";
  EXPECT_TRUE(compact.guards_intact() && z.guards_intact() && l1.guards_intact() &&
              steps.guards_intact());
}

// Piece-wise moves: 40 runs (enough for the OpenMP loop) of 0 to 12 elements, the sources in an
// order that is not the destinations', between buffers of exact values; every element checked,
// the ones no run reaches too.
template <class T>
void check_copy_runs(const Ops<T>& ops) {
  std::vector<kernels::CopyRun> runs;
  size_t dst_n = 0, src_n = 0;
  for (uint64_t j = 0; j < 40; ++j) {
    const uint64_t n = (j * 7) % 13;
    runs.push_back({.dst_offset = dst_n + 1, .src_offset = 0, .n = n});  // a gap of 1 in dst
    dst_n += n + 1;
  }
  for (size_t j = runs.size(); j-- > 0;) {  // sources back to front
    runs[j].src_offset = src_n;
    src_n += runs[j].n;
  }
  const Guarded<T> src = exact_values<T>(src_n, 8), pre = exact_values<T>(dst_n, 9);
  Guarded<T> copied = pre, added = pre;
  ops.copy_runs(copied.data(), src.data(), runs.data(), runs.size());
  ops.accumulate_runs(added.data(), src.data(), runs.data(), runs.size());
  std::vector<T> want_copy(pre.data(), pre.data() + dst_n), want_add = want_copy;
  for (const auto& r : runs)
    for (uint64_t i = 0; i < r.n; ++i) {
      want_copy[r.dst_offset + i] = src[r.src_offset + i];
      want_add[r.dst_offset + i] += src[r.src_offset + i];
    }
  size_t wrong_copy = 0, wrong_add = 0;
  for (size_t e = 0; e < dst_n; ++e) {
    wrong_copy += copied[e] != want_copy[e];
    wrong_add += added[e] != want_add[e];
  }
  EXPECT_EQ(wrong_copy, 0u) << "copy_runs";
  EXPECT_EQ(wrong_add, 0u) << "accumulate_runs";
  EXPECT_TRUE(copied.guards_intact() && added.guards_intact());
  ops.copy_runs(copied.data(), src.data(), runs.data(), 0);  // no runs: nothing moves
  EXPECT_EQ(std::memcmp(copied.data(), want_copy.data(), dst_n * sizeof(T)), 0);
}

// A linear layer with an empty inner dimension (C = 0): out = bias, and the backward still
// adds dout's column sums into dbias (dinp and dw are empty). Exact values.
template <class T>
void check_empty_matmul(const Ops<T>& ops) {
  const int N = 3, OC = 5;
  const Guarded<T> bias = exact_values<T>(OC, 10), dout = exact_values<T>(size_t(N) * OC, 11);
  const Guarded<T> pre = exact_values<T>(OC, 12);
  Guarded<T> out(size_t(N) * OC, T(-1)), dbias = pre, none(0, T(0));
  ops.matmul_forward(out.data(), none.data(), none.data(), bias.data(), N, 0, OC);
  ops.matmul_backward(none.data(), none.data(), dbias.data(), dout.data(), none.data(), none.data(),
                      N, 0, OC);
  size_t wrong_out = 0, wrong_dbias = 0;
  for (int n = 0; n < N; ++n)
    for (int j = 0; j < OC; ++j) wrong_out += out[size_t(n) * OC + j] != bias[j];
  for (int j = 0; j < OC; ++j) {
    T want = pre[j];
    for (int n = 0; n < N; ++n) want += dout[size_t(n) * OC + j];
    wrong_dbias += dbias[j] != want;
  }
  EXPECT_EQ(wrong_out, 0u) << "out = bias";
  EXPECT_EQ(wrong_dbias, 0u) << "dbias += column sums of dout";
  EXPECT_TRUE(out.guards_intact() && dbias.guards_intact() && none.guards_intact());
}

TEST(EmptyMatmul, ExactFloat) {
  check_empty_matmul(kernels::cpu_ops());
}
TEST(EmptyMatmul, ExactDouble) {
  check_empty_matmul(kernels::cpu_ops_f64());
}

TEST(CopyRuns, ExactFloat) {
  check_copy_runs(kernels::cpu_ops());
}
TEST(CopyRuns, ExactDouble) {
  check_copy_runs(kernels::cpu_ops_f64());
}

TEST(BlockOps, ExactFloat) {
  check_block_ops(kernels::cpu_ops());
}
TEST(BlockOps, ExactDouble) {
  check_block_ops(kernels::cpu_ops_f64());
}

TEST(Elementwise, SumSquaresAccurateAndDeterministic) {
  const size_t n = (size_t{1} << 20) + 3;
  const kernels::OpTable& ops = kernels::cpu_ops();
  Guarded<float> x(n, 0.0f);
  Rng rng(7);
  long double ref = 0;
  for (size_t k = 0; k < n; ++k) {
    x[k] = static_cast<float>(rng.normal());
    ref += static_cast<long double>(x[k]) * x[k];
  }
  const double s = ops.sum_squares(x.data(), n);
  // Double accumulation of 1e6 positive terms: relative error <~ 1e6 * 2^-53 ~ 1e-10.
  EXPECT_NEAR(s / static_cast<double>(ref), 1.0, 1e-10);
  for (int rep = 0; rep < 3; ++rep) EXPECT_EQ(ops.sum_squares(x.data(), n), s);
}

// Round to nearest, ties to even, checked against the value of the two bf16 neighbours of x
// (computed in double; the neighbour past the largest finite value counts as 2^128, so that
// overflow to infinity follows the same rule), not against the rule's own bit trick.
uint16_t reference_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (std::isnan(x)) return 0;  // not used: NaNs are checked separately
  const uint32_t lo = bits & 0xffff0000u, hi = lo + 0x10000u;  // toward zero, away from zero
  const auto value = [](uint32_t b) {
    if ((b & 0x7f800000u) == 0x7f800000u)
      return std::copysign(std::ldexp(1.0, 128), b >> 31 ? -1.0 : 1.0);
    float f;
    std::memcpy(&f, &b, 4);
    return double(f);
  };
  if (lo == bits) return uint16_t(lo >> 16);
  const double d_lo = std::abs(double(x) - value(lo)), d_hi = std::abs(value(hi) - double(x));
  if (d_lo != d_hi) return uint16_t((d_lo < d_hi ? lo : hi) >> 16);
  return uint16_t(((lo >> 16) & 1u) ? hi >> 16 : lo >> 16);  // a tie: the even one
}

TEST(Elementwise, Bf16ConversionsRoundToNearestEvenAndWidenExactly) {
  const kernels::OpTable& f32 = kernels::cpu_ops();
  const kernels::BasicOpTable<double>& f64 = kernels::cpu_ops_f64();
  // Widening: all 65,536 patterns, both tables.
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  std::vector<float> wide(all.size());
  std::vector<double> wide64(all.size());
  f32.from_bf16(wide.data(), all.data(), all.size());
  f64.from_bf16(wide64.data(), all.data(), all.size());
  size_t wrong = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const uint32_t want = uint32_t(i) << 16;
    uint32_t got;
    std::memcpy(&got, &wide[i], 4);
    wrong += got != want;
    wrong += std::memcmp(&wide64[i], &wide64[i], 8) != 0 ||
             !(std::isnan(wide64[i]) ? std::isnan(wide[i]) : wide64[i] == double(wide[i]));
  }
  EXPECT_EQ(wrong, 0u) << "from_bf16";
  // Narrowing: random bit patterns, exact ties, and the special values.
  std::vector<float> x;
  Rng rng(21);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t b = uint32_t(rng.next_u64());
    float f;
    std::memcpy(&f, &b, 4);
    x.push_back(f);
    const uint32_t tie = (b & 0xffff0000u) | 0x8000u;
    std::memcpy(&f, &tie, 4);
    x.push_back(f);
  }
  for (float f : {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), std::nanf(""), -std::nanf("")})
    x.push_back(f);
  std::vector<uint16_t> out(x.size()), out64(x.size());
  std::vector<double> x64(x.begin(), x.end());
  f32.to_bf16(out.data(), x.data(), x.size());
  f64.to_bf16(out64.data(), x64.data(), x64.size());
  size_t wrong_round = 0, wrong_nan = 0, wrong_f64 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    wrong_f64 += out64[i] != out[i];
    if (std::isnan(x[i])) {
      const uint32_t back = uint32_t(out[i]) << 16;
      float f;
      std::memcpy(&f, &back, 4);
      wrong_nan += !std::isnan(f) || std::signbit(f) != std::signbit(x[i]);
      continue;
    }
    wrong_round += out[i] != reference_bf16(x[i]);
  }
  EXPECT_EQ(wrong_round, 0u) << "to_bf16 against round-to-nearest-even";
  EXPECT_EQ(wrong_nan, 0u) << "to_bf16 of NaN";
  EXPECT_EQ(wrong_f64, 0u) << "the double table's to_bf16 against the float table's";
}

// ---- the op tables --------------------------------------------------------------------------

// Every entry of both CPU tables is set (ops_table.cpp also static_asserts it), and
// first_unset_op() names an entry a table leaves unset (e.g. one a new backend lacks).
TEST(OpTable, CpuTablesSetEveryEntry) {
  const char* unset32 = kernels::first_unset_op(kernels::cpu_ops());
  EXPECT_EQ(unset32, nullptr) << "cpu_ops()." << unset32 << " is unset";
  const char* unset64 = kernels::first_unset_op(kernels::cpu_ops_f64());
  EXPECT_EQ(unset64, nullptr) << "cpu_ops_f64()." << unset64 << " is unset";
  EXPECT_STREQ(kernels::cpu_ops().backend, "cpu");
  kernels::OpTable partial = kernels::cpu_ops();
  partial.rope_backward = nullptr;
  EXPECT_STREQ(kernels::first_unset_op(partial), "rope_backward");
  partial.encoder_forward = nullptr;
  EXPECT_STREQ(kernels::first_unset_op(partial), "encoder_forward");
}

}  // namespace
