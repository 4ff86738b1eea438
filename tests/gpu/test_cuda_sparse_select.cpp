// SCAPE's selection on CUDA (kernels/cuda/sparse_select.cuh) against the CPU: top_k_indices
// must return exactly the CPU's indices (src/optim/sparse_mask.h: NaN as -inf, -0 equal to +0,
// ties to the lower index, sorted) on Gaussian scores, on scores with many ties (a few distinct
// values), with NaNs, infinities, signed zeros and subnormals, for k = 0, 1, n/100, n - 1, n
// and with the cut among the zeros and at the smallest subnormal, sizes around the
// 4096-element tile and past 1024 tiles; gather, scatter, scale_at, the mask score and the age
// bonus on exact data, through the op table as SCAPE calls them. Buffers are staged with
// guard bands (cuda_staged_ops.h's Stager). Without a GPU every test is SKIPPED, never passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "cuda_staged_ops.h"
#include "kernels/cuda/sparse_select.cuh"
#include "optim/sparse_mask.h"
#include "skip_without_gpu.h"

namespace {

using gossamer::Rng;
using gossamer::cuda_test::Stager;

std::vector<uint32_t> cuda_top_k(const std::vector<float>& scores, size_t k) {
  std::vector<uint32_t> out(k, 0xdeadbeefu);
  Stager s("top_k_indices");
  gossamer::kernels::cuda::top_k_indices(s(scores.data(), scores.size()), scores.size(), k,
                                         s(out.data(), k));
  s.finish();
  return out;
}

enum class Scores { GAUSSIAN, FEW_VALUES, SPECIAL };

std::vector<float> make_scores(Scores kind, size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  const float special[] = {std::numeric_limits<float>::quiet_NaN(),
                           -std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           0.0f,
                           -0.0f,
                           std::numeric_limits<float>::denorm_min(),
                           -std::numeric_limits<float>::denorm_min()};
  for (auto& x : v) {
    switch (kind) {
      case Scores::GAUSSIAN:
        x = float(rng.normal());
        break;
      case Scores::FEW_VALUES:  // |m|-like scores with heavy ties
        x = float(rng.below(5)) * 0.25f;
        break;
      case Scores::SPECIAL:
        x = rng.below(2) ? special[rng.below(8)] : float(rng.normal());
        break;
    }
  }
  return v;
}

TEST(CudaSparseSelect, TopKEqualsCpu) {
  SKIP_WITHOUT_GPU();
  // 5,000,011: more than 1024 tiles, so the offsets' scan gives each thread several.
  for (size_t n : {size_t{1}, size_t{100}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{70001},
                   (size_t{1} << 20) + 3, size_t{5000011}}) {
    for (Scores kind : {Scores::GAUSSIAN, Scores::FEW_VALUES, Scores::SPECIAL}) {
      const std::vector<float> scores = make_scores(kind, n, n * 3 + size_t(kind));
      // Also k with the cut among the zeros (+0 and -0 tie) and at the smallest subnormal.
      size_t positive = 0, above_denorm = 0;
      for (float x : scores) {
        positive += x > 0.0f;
        above_denorm += x > std::numeric_limits<float>::denorm_min();
      }
      for (size_t k : {size_t{0}, size_t{1}, n / 100, n - 1, n, std::min(n, positive + 3),
                       std::min(n, above_denorm + 1)}) {
        const std::vector<uint32_t> want = gossamer::optim::top_k_indices(scores, k);
        const std::vector<uint32_t> got = cuda_top_k(scores, k);
        size_t wrong = 0;
        for (size_t j = 0; j < k; ++j) wrong += got[j] != want[j];
        EXPECT_EQ(wrong, 0u) << "n = " << n << ", k = " << k << ", scores " << int(kind);
      }
    }
  }
}

TEST(CudaSparseSelect, TopKRejectsKAboveN) {
  SKIP_WITHOUT_GPU();
  EXPECT_THROW(gossamer::kernels::cuda::top_k_indices(nullptr, 3, 4, nullptr), gossamer::Error);
}

// gather / scatter on values k/8: every result exact.
TEST(CudaSparseSelect, GatherScatterExact) {
  SKIP_WITHOUT_GPU();
  for (size_t n : {size_t{1}, size_t{4097}, size_t{300001}}) {
    Rng rng(n);
    std::vector<float> x(n), packed, y(n, -1.0f);
    for (auto& v : x) v = float(int(rng.below(257)) - 128) / 8;
    std::vector<uint32_t> idx;
    for (size_t i = 0; i < n; ++i)
      if (rng.below(10) == 0 || i + 1 == n) idx.push_back(uint32_t(i));
    packed.assign(idx.size(), std::nanf(""));
    {
      Stager s("gather");
      gossamer::kernels::cuda::gather(s(packed.data(), packed.size()), s(x.data(), n),
                                      s(idx.data(), idx.size()), idx.size());
      s.finish();
    }
    {
      Stager s("scatter");
      gossamer::kernels::cuda::scatter(s(y.data(), n), s(packed.data(), packed.size()),
                                       s(idx.data(), idx.size()), idx.size());
      s.finish();
    }
    size_t wrong = 0;
    for (size_t j = 0; j < idx.size(); ++j) wrong += packed[j] != x[idx[j]];
    size_t j = 0;
    for (size_t i = 0; i < n; ++i) {
      const bool listed = j < idx.size() && idx[j] == i;
      wrong += y[i] != (listed ? x[i] : -1.0f);
      j += listed;
    }
    EXPECT_EQ(wrong, 0u) << "n = " << n;
  }
}

// The op-table entries SCAPE calls (staged) against the CPU table on exact values (binary
// fractions: every product and sum exact, fused or not): equal bit for bit.
TEST(CudaSparseSelect, ScoreAndScaleAtMatchCpu) {
  SKIP_WITHOUT_GPU();
  const auto cuda = gossamer::cuda_test::cuda_staged_ops();
  const auto& cpu = gossamer::kernels::cpu_ops();
  for (size_t n : {size_t{1}, size_t{1025}, size_t{300001}}) {
    Rng rng(n + 5);
    std::vector<float> x(n), y(n), last(n);
    for (size_t i = 0; i < n; ++i) {
      x[i] = float(int(rng.below(257)) - 128) / 8;
      y[i] = float(int(rng.below(257)) - 128) / 8;
      last[i] = float(rng.below(9));
    }
    x[0] = std::nanf("");  // scale_at 0 must write +0 over it
    std::vector<uint32_t> idx;
    for (size_t i = 0; i < n; ++i)
      if (i == 0 || rng.below(3) == 0) idx.push_back(uint32_t(i));
    size_t wrong = 0;
    for (float factor : {0.0f, -0.5f}) {
      std::vector<float> a = x, b = x;
      cuda.scale_at(a.data(), idx.data(), idx.size(), factor);
      cpu.scale_at(b.data(), idx.data(), idx.size(), factor);
      // Bits equal, or both NaN: a GPU's multiply returns its canonical NaN where the CPU's keeps
      // the operand's payload. Factor 0 must write +0 over the NaN on both (bits checked).
      for (size_t i = 0; i < n; ++i)
        wrong += std::memcmp(&a[i], &b[i], sizeof(float)) != 0 &&
                 !(std::isnan(a[i]) && std::isnan(b[i]));
      if (factor == 0.0f) {
        const float plus_zero = 0.0f;
        wrong += std::memcmp(&a[0], &plus_zero, sizeof(float)) != 0;
      }
    }
    EXPECT_EQ(wrong, 0u) << "scale_at, n = " << n;
    x[0] = 1.0f;
    std::vector<float> sa(n, -1.0f), sb(n, -2.0f), ta(n, -1.0f), tb(n, -2.0f);
    cuda.mask_score(sa.data(), 0.75f, x.data(), -2.0f, y.data(), n);
    cpu.mask_score(sb.data(), 0.75f, x.data(), -2.0f, y.data(), n);
    cuda.mask_score(ta.data(), 1.0f, y.data(), 0.0f, nullptr, n);
    cpu.mask_score(tb.data(), 1.0f, y.data(), 0.0f, nullptr, n);
    cuda.age_bonus(sa.data(), last.data(), 0.25f, 5.0f, n);
    cpu.age_bonus(sb.data(), last.data(), 0.25f, 5.0f, n);
    size_t wrong_score = 0, wrong_abs = 0;
    for (size_t i = 0; i < n; ++i) wrong_score += sa[i] != sb[i], wrong_abs += ta[i] != tb[i];
    EXPECT_EQ(wrong_score, 0u) << "mask_score + age_bonus, n = " << n;
    EXPECT_EQ(wrong_abs, 0u) << "mask_score without y, n = " << n;
  }
}

}  // namespace
