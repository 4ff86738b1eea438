// The naive long-double reference of the attention op's forward (kernels/cpu/attention.h),
// written from the header's formula with HF's repeat_kv for grouped-query attention (kv head g
// serves query heads g*group .. (g+1)*group-1): out = softmax(q k^T / sqrt(hs)) v over s <= t;
// and the buffer sizes of the attention op cases. Shared by the GPT-2 and Llama attention op
// cases (gpt2_op_cases.h, llama_op_cases.h). Header-only test code.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "op_test_harness.h"

namespace gossamer::op_test {

// Buffer sizes for the op cases: the largest saved state and workspace any backend's attention
// asks for (kernels/ops.h), the CPU's (B,NH,T,T) matrices or CUDA's (B,NH,T,2) statistics and
// (B,NH,T) workspace; fits_backend() checks a table's own sizes against them before a call.
inline size_t attention_saved_elements(int B, int T, int NH) {
  return size_t(B) * NH * T * size_t(std::max(T, 2));
}
inline size_t attention_scratch_elements(int B, int T, int NH) {
  return size_t(B) * NH * T * T;
}
template <class Ops>
bool fits_backend(const Ops& ops, int B, int T, int NH) {
  const bool fits = ops.attention_saved_size(B, T, NH) <= attention_saved_elements(B, T, NH) &&
                    ops.attention_scratch_size(B, T, NH) <= attention_scratch_elements(B, T, NH);
  if (!fits) ADD_FAILURE() << ops.backend << " attention needs more than the case's buffers";
  return fits;
}

// out (B,T,NH*hs) in long double.
template <class T>
std::vector<long double> attention_reference(const Guarded<T>& qkv, int B, int Tn, int NH, int NKV,
                                             int hs) {
  const int group = NH / NKV, C = NH * hs;
  const size_t ld = size_t(NH + 2 * NKV) * hs;
  std::vector<long double> out(size_t(B) * Tn * C), a(Tn);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const int g = h / group;
      for (int t = 0; t < Tn; ++t) {
        const T* q = &qkv[(size_t(b) * Tn + t) * ld + size_t(h) * hs];
        long double mx = -std::numeric_limits<long double>::infinity(), sum = 0;
        for (int s = 0; s <= t; ++s) {
          const T* k = &qkv[(size_t(b) * Tn + s) * ld + C + size_t(g) * hs];
          long double dot = 0;
          for (int d = 0; d < hs; ++d) dot += static_cast<long double>(q[d]) * k[d];
          a[s] = dot / std::sqrt(static_cast<long double>(hs));
          mx = std::max(mx, a[s]);
        }
        for (int s = 0; s <= t; ++s) sum += (a[s] = std::exp(a[s] - mx));
        for (int d = 0; d < hs; ++d) {
          long double o = 0;
          for (int s = 0; s <= t; ++s) {
            const size_t v = (size_t(b) * Tn + s) * ld + C + size_t(NKV + g) * hs;
            o += a[s] / sum * qkv[v + d];
          }
          out[(size_t(b) * Tn + t) * C + size_t(h) * hs + d] = o;
        }
      }
    }
  }
  return out;
}

// max |got - ref| / (|ref| + rms(ref)). Double runs are the same arithmetic as the reference up
// to rounding (1e-12 leaves ~1e3 x margin over the observed ~1e-15); float runs round every
// product (~1e-7 each, reductions of <= 10^3 terms).
template <class T>
void expect_attention_matches_reference(const std::string& what, const Guarded<T>& out,
                                        const std::vector<long double>& ref) {
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  ASSERT_EQ(out.size(), ref.size()) << what;
  EXPECT_LE(max_rel_err(to_double(out), std::vector<double>(ref.begin(), ref.end()), 0.0), tol)
      << what << " out vs the naive reference";
}

}  // namespace gossamer::op_test
