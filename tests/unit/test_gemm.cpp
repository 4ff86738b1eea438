// Tests for kernels/cpu/gemm.h: every backend x trans_a x trans_b x beta x alpha x
// leading-dimension padding on awkward shapes, against a naive reference in higher precision; guard
// bands around C (and the padding inside its rows) must stay untouched; repeated calls are bitwise
// identical; concurrent calls from several threads are correct.
#include "kernels/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace gossamer::kernels::cpu {
namespace {

struct Shape {
  int M, N, K;
};

// Awkward shapes: degenerate, odd, tall-skinny, a wide vocab-like one, sizes just past powers of
// two (kernel tails), and a long K (several K blocks accumulated).
const Shape kShapes[] = {{1, 1, 1},      {7, 13, 5},     {1025, 3, 17},
                         {33, 50257, 8}, {3, 1, 1000},   {130, 70, 65},
                         {257, 129, 63}, {64, 96, 1100}, {256, 384, 128}};

const GemmBackend kBackends[] = {GemmBackend::GEMM_BACKEND_OPENBLAS,
                                 GemmBackend::GEMM_BACKEND_ONEDNN, GemmBackend::GEMM_BACKEND_AUTO};

constexpr int kGuard = 37;  // elements of guard band before and after C

// Restores the process-wide backend after each test.
class GemmTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = gemm_backend(); }
  void TearDown() override { gemm_set_backend(saved_); }
  GemmBackend saved_ = GemmBackend::GEMM_BACKEND_AUTO;
};

template <class T>
std::vector<T> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(static_cast<double>(rng()) / 4294967296.0 * 2.0 - 1.0);
  return v;
}

// The sentinel is a NaN with a specific payload, so a write of any value (even a NaN computed by
// a kernel) is detected by the bitwise comparison.
template <class T>
T sentinel() {
  if constexpr (sizeof(T) == 4) {
    uint32_t bits = 0x7fc0beefu;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  } else {
    uint64_t bits = 0x7ff80000deadbeefull;
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// How a product is computed: one implementation directly (gemm_with_impl), or gemm<T>() under a
// process-wide backend (which then routes by its rule).
struct Runner {
  std::optional<GemmImpl> impl;
  GemmBackend backend = GemmBackend::GEMM_BACKEND_AUTO;
  std::string name() const {
    return impl ? std::string("impl ") + gemm_impl_name(*impl)
                : std::string("backend ") + gemm_backend_name(backend);
  }
};

// Every implementation directly, and every backend through gemm<float>().
std::vector<Runner> all_float_runners() {
  std::vector<Runner> r;
  for (GemmImpl impl : {GemmImpl::GEMM_IMPL_OPENBLAS, GemmImpl::GEMM_IMPL_ONEDNN_MATMUL,
                        GemmImpl::GEMM_IMPL_ONEDNN_SGEMM}) {
    r.push_back({impl});
  }
  for (GemmBackend be : kBackends) r.push_back({std::nullopt, be});
  return r;
}

// Reference precision: double for float (products of floats are exact in double and the sum's
// error is ~2^29 times below float's), long double for double.
template <class T>
using Ref = std::conditional_t<sizeof(T) == 4, double, long double>;

// One gemm problem (inputs laid out as the caller stores them, with row padding) and its
// reference products, computed once and reused for every backend, alpha and beta.
template <class T>
struct Problem {
  bool ta, tb;
  int M, N, K, lda, ldb, ldc;
  std::vector<T> A, B, Cin;      // Cin (M,N): initial C for beta != 0
  std::vector<Ref<T>> dot, mag;  // (M,N): sum_k a_ik b_kj and sum_k |a_ik b_kj|

  Problem(bool ta_, bool tb_, Shape s, int pad, uint32_t seed)
      : ta(ta_), tb(tb_), M(s.M), N(s.N), K(s.K) {
    const int a_rows = ta ? K : M, a_cols = ta ? M : K;
    const int b_rows = tb ? N : K, b_cols = tb ? K : N;
    lda = a_cols + pad;
    ldb = b_cols + pad;
    ldc = N + pad;
    A = random_vector<T>(size_t(a_rows) * lda, seed);
    B = random_vector<T>(size_t(b_rows) * ldb, seed + 1);
    Cin = random_vector<T>(size_t(M) * N, seed + 2);
    dot.assign(size_t(M) * N, 0);
    mag.assign(size_t(M) * N, 0);
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < N; ++j) {
        Ref<T> d = 0, m = 0;
        for (int k = 0; k < K; ++k) {
          const Ref<T> p = Ref<T>(a(i, k)) * Ref<T>(b(k, j));
          d += p;
          m += std::fabs(p);
        }
        dot[size_t(i) * N + j] = d;
        mag[size_t(i) * N + j] = m;
      }
    }
  }
  T a(int i, int k) const { return ta ? A[size_t(k) * lda + i] : A[size_t(i) * lda + k]; }
  T b(int k, int j) const { return tb ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j]; }

  // Runs gemm on a buffer with guard bands around C and sentinels in its row padding.
  // beta == 0: C must not be read (BLAS semantics), so it starts as NaN.
  std::vector<T> run(T alpha, T beta, const Runner& how) const {
    std::vector<T> C(size_t(M) * ldc + 2 * kGuard, sentinel<T>());
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        C[kGuard + size_t(i) * ldc + j] =
            beta == T(0) ? std::numeric_limits<T>::quiet_NaN() : Cin[size_t(i) * N + j];
    T* c = C.data() + kGuard;
    if constexpr (std::is_same_v<T, float>) {
      if (how.impl) {
        gemm_with_impl(*how.impl, ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, c,
                       ldc);
        return C;
      }
    }
    gemm_set_backend(how.backend);
    gemm<T>(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, c, ldc);
    return C;
  }

  // Error bound: a dot product of length K in precision eps (any summation order or blocking)
  // has |error| <= K*eps * sum_k |a_ik b_kj|, to first order; alpha*, beta* and the final add
  // cost a few more roundings. We allow (K + 4) * eps times the magnitude, which any correct
  // kernel meets and a wrong element, tail, stride or transpose cannot.
  // Positions outside C (guard bands and row padding) must still hold the sentinel bitwise.
  void check(const std::vector<T>& C, T alpha, T beta, const std::string& what) const {
    const Ref<T> eps = std::numeric_limits<T>::epsilon();
    int bad = 0;
    for (int i = 0; i < M && bad < 5; ++i) {
      for (int j = 0; j < N && bad < 5; ++j) {
        const size_t ij = size_t(i) * N + j;
        const Ref<T> cin = beta == T(0) ? 0 : Ref<T>(beta) * Ref<T>(Cin[ij]);
        const Ref<T> ref = Ref<T>(alpha) * dot[ij] + cin;
        const Ref<T> tol = (K + 4) * eps * (std::fabs(Ref<T>(alpha)) * mag[ij] + std::fabs(cin)) +
                           std::numeric_limits<T>::denorm_min();
        const T got = C[kGuard + size_t(i) * ldc + j];
        if (!(std::fabs(Ref<T>(got) - ref) <= tol)) {
          ADD_FAILURE() << what << " C(" << i << "," << j << ") = " << got << ", expected "
                        << double(ref) << " +- " << double(tol);
          ++bad;
        }
      }
    }
    for (size_t p = 0; p < C.size(); ++p) {
      const bool inside = p >= size_t(kGuard) && p < size_t(kGuard) + size_t(M) * ldc &&
                          (p - kGuard) % ldc < size_t(N);
      if (!inside && !same_bits(C[p], sentinel<T>())) {
        ADD_FAILURE() << what << " wrote outside C at buffer offset " << p;
        return;
      }
    }
  }
};

std::string describe(const Runner& how, bool ta, bool tb, Shape s, int pad, double alpha,
                     double beta) {
  return strprintf("[%s ta=%d tb=%d %dx%dx%d pad=%d alpha=%g beta=%g]", how.name().c_str(), ta, tb,
                   s.M, s.N, s.K, pad, alpha, beta);
}

// Every (alpha, beta) of the product on every runner; each call is repeated and must give the
// same bits (determinism).
template <class T>
void check_all(const Problem<T>& p, Shape s, int pad, const std::vector<Runner>& runners,
               const std::vector<T>& alphas, const std::vector<T>& betas) {
  for (const Runner& how : runners) {
    for (T beta : betas) {
      for (T alpha : alphas) {
        const std::string what = describe(how, p.ta, p.tb, s, pad, alpha, beta);
        const std::vector<T> c1 = p.run(alpha, beta, how);
        p.check(c1, alpha, beta, what);
        const std::vector<T> c2 = p.run(alpha, beta, how);
        ASSERT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(T)))
            << what << " not bitwise reproducible";
      }
    }
  }
}

TEST_F(GemmTest, FloatAllImplsAndBackendsTransposesAlphaBetaPadding) {
  uint32_t seed = 1;
  for (Shape s : kShapes) {
    for (int pad : {0, 3}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          const Problem<float> p(ta, tb, s, pad, seed += 3);
          check_all<float>(p, s, pad, all_float_runners(), {1.0f, 0.5f}, {0.0f, 1.0f});
        }
      }
    }
  }
}

// alpha and beta that the backends route to OpenBLAS; each implementation must still get them
// right when called directly (alpha = 0: A and B are not needed; beta = 0 covered above).
TEST_F(GemmTest, FloatUnusualAlphaBeta) {
  uint32_t seed = 1000;
  for (Shape s : {Shape{7, 13, 5}, Shape{130, 70, 65}}) {
    const Problem<float> p(false, true, s, 2, seed += 3);
    check_all<float>(p, s, 2, all_float_runners(), {-2.0f, 0.0f}, {0.25f, -1.0f});
  }
}

TEST_F(GemmTest, DoubleMatchesReference) {
  uint32_t seed = 2000;
  // double always runs on OpenBLAS, whatever the backend.
  const std::vector<Runner> runners = {{std::nullopt, GemmBackend::GEMM_BACKEND_ONEDNN},
                                       {std::nullopt, GemmBackend::GEMM_BACKEND_OPENBLAS}};
  for (Shape s : kShapes) {
    if (s.N > 10000) s.M = 5;  // keep the long-double reference quick
    for (int pad : {0, 3}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          const Problem<double> p(ta, tb, s, pad, seed += 3);
          check_all<double>(p, s, pad, runners, {1.0, 0.5}, {0.0, 1.0});
        }
      }
    }
  }
}

TEST_F(GemmTest, EmptyDimensions) {
  for (GemmBackend be : kBackends) {
    gemm_set_backend(be);
    // K == 0: C = beta * C.
    std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
    const float a = 0.0f, b = 0.0f;
    gemm<float>(false, false, 2, 2, 0, 1.0f, &a, 1, &b, 2, 1.0f, c.data(), 2);
    EXPECT_EQ(c, (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f})) << gemm_backend_name(be);
    gemm<float>(false, false, 2, 2, 0, 1.0f, &a, 1, &b, 2, 0.0f, c.data(), 2);
    EXPECT_EQ(c, (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f})) << gemm_backend_name(be);
    // M == 0 or N == 0: nothing happens.
    gemm<float>(false, false, 0, 2, 3, 1.0f, &a, 3, &b, 2, 0.0f, c.data(), 2);
    gemm<float>(false, false, 2, 0, 3, 1.0f, &a, 3, &b, 1, 0.0f, c.data(), 1);
  }
}

// Results must not depend on where the buffers sit in memory (some BLAS take alignment-dependent
// code paths); bitwise reproducibility of a training run relies on this too.
TEST_F(GemmTest, ResultsDoNotDependOnAlignment) {
  uint32_t seed = 4000;
  for (GemmImpl impl : {GemmImpl::GEMM_IMPL_OPENBLAS, GemmImpl::GEMM_IMPL_ONEDNN_MATMUL,
                        GemmImpl::GEMM_IMPL_ONEDNN_SGEMM}) {
    for (Shape s : {Shape{130, 70, 65}, Shape{256, 384, 128}, Shape{64, 96, 1100}}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          const Problem<float> p(ta, tb, s, 0, seed += 3);
          std::vector<float> first;
          for (int offset : {0, 1, 3, 16}) {
            std::vector<float> a(offset + p.A.size()), b(offset + p.B.size()),
                c(offset + p.Cin.size());
            std::copy(p.A.begin(), p.A.end(), a.begin() + offset);
            std::copy(p.B.begin(), p.B.end(), b.begin() + offset);
            std::copy(p.Cin.begin(), p.Cin.end(), c.begin() + offset);
            gemm_with_impl(impl, ta, tb, s.M, s.N, s.K, 1.0f, a.data() + offset, p.lda,
                           b.data() + offset, p.ldb, 1.0f, c.data() + offset, p.ldc);
            std::vector<float> out(c.begin() + offset, c.end());
            if (offset == 0) {
              first = out;
            } else {
              EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * sizeof(float)))
                  << gemm_impl_name(impl) << " ta=" << ta << " tb=" << tb << " " << s.M << "x"
                  << s.N << "x" << s.K << ": result changes with buffer offset " << offset;
            }
          }
        }
      }
    }
  }
}

// Cached primitives, per-thread streams and scratchpads under concurrent use.
TEST_F(GemmTest, ConcurrentCallsFromSeveralThreads) {
  // Two problems; per oneDNN implementation, two threads run each problem at once (same cache
  // key, so the same primitive executes concurrently). Every result must be right.
  const std::vector<Problem<float>> problems = {
      Problem<float>(false, true, Shape{96, 80, 70}, 0, 3000),
      Problem<float>(true, false, Shape{97, 81, 71}, 1, 3003)};
  constexpr int kThreads = 8;
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Runner how{t < kThreads / 2 ? GemmImpl::GEMM_IMPL_ONEDNN_MATMUL
                                        : GemmImpl::GEMM_IMPL_ONEDNN_SGEMM};
      for (int rep = 0; rep < 20; ++rep) results[t] = problems[t % 2].run(1.0f, 1.0f, how);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    problems[t % 2].check(results[t], 1.0f, 1.0f, "thread " + std::to_string(t));
  }
}

TEST_F(GemmTest, InvalidArgumentsThrow) {
  float x[4] = {};
  EXPECT_THROW(gemm<float>(false, false, 2, 2, 2, 1.0f, x, 1, x, 2, 0.0f, x, 2), Error);  // lda
  EXPECT_THROW(gemm<float>(false, true, 2, 2, 2, 1.0f, x, 2, x, 1, 0.0f, x, 2), Error);   // ldb
  EXPECT_THROW(gemm<float>(false, false, 2, 2, 2, 1.0f, x, 2, x, 2, 0.0f, x, 1), Error);  // ldc
  EXPECT_THROW(gemm<float>(false, false, -1, 2, 2, 1.0f, x, 2, x, 2, 0.0f, x, 2), Error);
}

TEST_F(GemmTest, BackendNamesAndSelection) {
  for (GemmBackend be : kBackends) {
    EXPECT_EQ(gemm_backend_from_string(gemm_backend_name(be)), be);
  }
  EXPECT_THROW(gemm_backend_from_string("cuda"), Error);
  EXPECT_THROW(gemm_backend_from_string(""), Error);

  using enum GemmImpl;
  gemm_set_backend(GemmBackend::GEMM_BACKEND_OPENBLAS);
  EXPECT_EQ(gemm_impl_for(false, true, 4096, 4096, 4096, 1.0f, 0.0f), GEMM_IMPL_OPENBLAS);
  for (GemmBackend be : {GemmBackend::GEMM_BACKEND_ONEDNN, GemmBackend::GEMM_BACKEND_AUTO}) {
    gemm_set_backend(be);
    // Unusual alpha/beta and K == 0 go to OpenBLAS on every backend.
    EXPECT_EQ(gemm_impl_for(false, true, 512, 512, 512, 0.5f, 0.0f), GEMM_IMPL_OPENBLAS);
    EXPECT_EQ(gemm_impl_for(false, true, 512, 512, 512, 1.0f, 0.5f), GEMM_IMPL_OPENBLAS);
    EXPECT_EQ(gemm_impl_for(false, true, 512, 512, 0, 1.0f, 1.0f), GEMM_IMPL_OPENBLAS);
    for (Shape s : kShapes) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          const GemmImpl impl = gemm_impl_for(ta, tb, s.M, s.N, s.K, 1.0f, 0.0f);
          // The ONEDNN backend never leaves oneDNN for alpha = 1, beta in {0,1}.
          if (be == GemmBackend::GEMM_BACKEND_ONEDNN) {
            EXPECT_NE(impl, GEMM_IMPL_OPENBLAS);
          }
          EXPECT_EQ(gemm_backend_for(ta, tb, s.M, s.N, s.K, 1.0f, 0.0f),
                    impl == GEMM_IMPL_OPENBLAS ? GemmBackend::GEMM_BACKEND_OPENBLAS
                                               : GemmBackend::GEMM_BACKEND_ONEDNN);
          // The rule depends on the arguments only.
          EXPECT_EQ(impl, gemm_impl_for(ta, tb, s.M, s.N, s.K, 1.0f, 0.0f));
        }
      }
    }
  }

  const std::string d = gemm_describe();
  EXPECT_NE(d.find("oneDNN"), std::string::npos) << d;
  EXPECT_NE(d.find("OpenBLAS"), std::string::npos) << d;
}

}  // namespace
}  // namespace gossamer::kernels::cpu
