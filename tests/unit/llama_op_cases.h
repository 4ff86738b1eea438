// The Llama op cases of the table-driven op tests (op_test_harness.h) and their grid of
// awkward shapes: RMSNorm, RoPE, SwiGLU, grouped-query attention, the encoder without position
// embedding; each case's check() compares the forward with a naive long-double reference
// written from the header's formula. Shared by the CPU test (test_ops_llama.cpp) and the CUDA
// test (tests/gpu/test_cuda_ops.cpp), which run the same cases through their own op tables.
// Header-only test code.
#pragma once

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

#include "attention_reference.h"
#include "core/rng.h"
#include "kernels/ops.h"
#include "op_test_harness.h"

namespace gossamer::op_test::llama {

// Forward vs reference: max |got - ref| / (|ref| + rms(ref)) over the tensor. Double runs are
// the same arithmetic as the reference up to rounding (1e-12 leaves ~1e3 x margin over the
// observed ~1e-15); float runs round every product (~1e-7 each, reductions of <= 10^3 terms).
template <class T>
void expect_matches_reference(const std::string& what, const Guarded<T>& got,
                              const std::vector<long double>& ref) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  std::vector<double> r(ref.begin(), ref.end());
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  EXPECT_LE(max_rel_err(to_double(got), r, 0.0), tol) << what << " vs the naive reference";
}

// ---- RMSNorm ---------------------------------------------------------------------------------

class RmsNormCase : public OpCase {
 public:
  // eps = 10^-eps_neg_exp (an int, so that the case name carries it).
  RmsNormCase(int N, int C, int eps_neg_exp)
      : N_(N), C_(C), eps_neg_exp_(eps_neg_exp), eps_(std::pow(10.0, -eps_neg_exp)) {}
  std::string name() const override {
    return dims("rmsnorm", {{"N", N_}, {"C", C_}, {"eps1e", eps_neg_exp_}});
  }
  void build(Rng& rng) override {
    auto& x = add_input("inp", size_t(N_) * C_);
    fill_normal(x, rng, 0.5, 2.0);  // offset: RMSNorm does not centre, the mean must matter
    // One row of tiny values: there eps dominates the mean square (eps is really applied).
    if (N_ > 2)
      for (int c = 0; c < C_; ++c) x[size_t(1) * C_ + c] *= 1e-3;
    fill_normal(add_input("w", C_), rng, 1.0, 0.5);
    add_output("out", size_t(N_) * C_, &rng);
    add_output("rstd", N_, nullptr);
    const auto& xs = inputs()[0].value;  // (add_input invalidates earlier references)
    if (C_ == 1)
      for (int n = 0; n < N_; ++n) floor_ = std::max(floor_, 1.0 / std::sqrt(xs[n] * xs[n] + eps_));
  }
  // The tiny row (|x| ~ 2e-3, rstd ~ 300) is strongly curved on the scale of the default step
  // 1e-5: truncation (h / 3e-3)^2 ~ 1e-5 relative. h = 1e-6 gives ~1e-7 relative, and rounding
  // noise ~1e-14 / 2h = 5e-9 stays below fd_atol.
  double grad_eps() const override { return 1e-6; }
  // C = 1: dinp = dout w rstd (1 - xhat^2) is ~eps / x^2 of its terms |dout w| rstd, which
  // cancel; float and double both return rounding noise of those terms.
  double err_floor() const override { return floor_; }
  OP_CASE_DISPATCH
  OP_CASE_CHECKS

 private:
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    ops.rmsnorm_forward(r.out[0].data(), r.out[1].data(), r.in[0].data(), r.in[1].data(), N_, C_,
                        eps_);
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    ops.rmsnorm_backward(r.grad[0].data(), r.grad[1].data(), r.dout[0].data(), r.in[0].data(),
                         r.in[1].data(), r.out[1].data(), N_, C_);
  }
  // out = x / sqrt(mean(x^2) + eps) * w; rstd = 1 / sqrt(mean(x^2) + eps).
  template <class T>
  void chk(const Run<T>& r) const {
    std::vector<long double> out(size_t(N_) * C_), rstd(N_);
    for (int n = 0; n < N_; ++n) {
      long double ms = 0;
      for (int c = 0; c < C_; ++c) {
        const long double x = r.in[0][size_t(n) * C_ + c];
        ms += x * x;
      }
      rstd[n] = 1.0L / std::sqrt(ms / C_ + static_cast<long double>(eps_));
      for (int c = 0; c < C_; ++c)
        out[size_t(n) * C_ + c] = r.in[0][size_t(n) * C_ + c] * rstd[n] * r.in[1][c];
    }
    expect_matches_reference(name() + " out", r.out[0], out);
    expect_matches_reference(name() + " rstd", r.out[1], rstd);
  }
  int N_, C_, eps_neg_exp_;
  double eps_, floor_ = 0.0;
};

// ---- RoPE ------------------------------------------------------------------------------------

// The op under test is y = x with heads [0, n_heads) of each row rotated (rope_forward on a
// copy); the other columns of a row pass through. Its gradient is rope_backward applied in
// place to a copy of dout (assigned).
class RopeCase : public OpCase {
 public:
  RopeCase(int B, int T, int n_heads, int hs, int extra, int theta)
      : B_(B), T_(T), NH_(n_heads), hs_(hs), stride_(n_heads * hs + extra), theta_(theta) {}
  std::string name() const override {
    return dims("rope", {{"B", B_},
                         {"T", T_},
                         {"heads", NH_},
                         {"hs", hs_},
                         {"stride", stride_},
                         {"theta", theta_}});
  }
  void build(Rng& rng) override {
    fill_normal(add_input("x", n(), true, /*grad_assigned=*/true), rng);
    add_output("out", n(), &rng);
  }
  OP_CASE_DISPATCH
  OP_CASE_CHECKS

 private:
  size_t n() const { return size_t(B_) * T_ * stride_; }
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    std::copy_n(r.in[0].data(), n(), r.out[0].data());
    ops.rope_forward(r.out[0].data(), B_, T_, NH_, hs_, stride_, double(theta_));
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    std::copy_n(r.dout[0].data(), n(), r.grad[0].data());
    ops.rope_backward(r.grad[0].data(), B_, T_, NH_, hs_, stride_, double(theta_));
  }
  // HF apply_rotary_pos_emb: y = x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1],
  // cos/sin = cat(freqs, freqs), freqs[i] = t / theta^(2i/hs). Columns past the heads: y = x.
  template <class T>
  void chk(const Run<T>& r) const {
    std::vector<long double> ref(n());
    size_t untouched_changed = 0;
    const int half = hs_ / 2;
    for (int b = 0; b < B_; ++b) {
      for (int t = 0; t < T_; ++t) {
        const size_t row = (size_t(b) * T_ + t) * stride_;
        for (int c = 0; c < stride_; ++c) ref[row + c] = r.in[0][row + c];
        for (int c = NH_ * hs_; c < stride_; ++c)
          untouched_changed += std::memcmp(&r.out[0][row + c], &r.in[0][row + c], sizeof(T)) != 0;
        for (int h = 0; h < NH_; ++h) {
          for (int j = 0; j < hs_; ++j) {
            const int i = j % half;
            const long double freq = t / std::pow(static_cast<long double>(theta_), 2.0L * i / hs_);
            const long double x = r.in[0][row + h * hs_ + j];
            const long double partner = r.in[0][row + h * hs_ + (j < half ? j + half : j - half)];
            const long double rotated = j < half ? -partner : partner;  // rotate_half
            ref[row + h * hs_ + j] = x * std::cos(freq) + rotated * std::sin(freq);
          }
        }
      }
    }
    expect_matches_reference(name() + " out", r.out[0], ref);
    EXPECT_EQ(untouched_changed, 0u) << name() << ": columns past the heads must not change";
  }
  int B_, T_, NH_, hs_, stride_, theta_;
};

// ---- SwiGLU ----------------------------------------------------------------------------------

class SwigluCase : public OpCase {
 public:
  SwigluCase(int N, int F) : N_(N), F_(F) {}
  std::string name() const override { return dims("swiglu", {{"N", N_}, {"F", F_}}); }
  void build(Rng& rng) override {
    auto& x = add_input("inp", size_t(N_) * 2 * F_);
    // Mostly the working range; some gate tails (saturation, and below -80 the capped exp).
    for (size_t k = 0; k < x.size(); ++k) {
      const bool gate = int(k % (2 * F_)) < F_;
      x[k] = gate && k % 7 == 3 ? 240.0 * rng.uniform() - 120.0 : 2.0 * rng.normal();
    }
    x[0] = 0.0;
    add_output("out", size_t(N_) * F_, &rng);
  }
  OP_CASE_DISPATCH
  OP_CASE_CHECKS

 private:
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    ops.swiglu_forward(r.out[0].data(), r.in[0].data(), N_, F_);
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    ops.swiglu_backward(r.grad[0].data(), r.dout[0].data(), r.in[0].data(), N_, F_);
  }
  template <class T>
  void chk(const Run<T>& r) const {
    std::vector<long double> ref(size_t(N_) * F_);
    for (int n = 0; n < N_; ++n) {
      for (int f = 0; f < F_; ++f) {
        const long double gate = r.in[0][size_t(n) * 2 * F_ + f];
        const long double up = r.in[0][size_t(n) * 2 * F_ + F_ + f];
        ref[size_t(n) * F_ + f] = gate / (1.0L + std::exp(-gate)) * up;
      }
    }
    expect_matches_reference(name() + " out", r.out[0], ref);
  }
  int N_, F_;
};

// ---- grouped-query attention -----------------------------------------------------------------

class GqaAttentionCase : public OpCase {
 public:
  GqaAttentionCase(int B, int T, int NH, int NKV, int hs)
      : B_(B), T_(T), NH_(NH), NKV_(NKV), hs_(hs) {}
  std::string name() const override {
    return dims("gqa", {{"B", B_}, {"T", T_}, {"NH", NH_}, {"NKV", NKV_}, {"hs", hs_}});
  }
  void build(Rng& rng) override {
    fill_normal(add_input("qkv", size_t(B_) * T_ * ld()), rng);
    add_output("out", size_t(B_) * T_ * C(), &rng);
    add_saved_state("saved", attention_saved_elements(B_, T_, NH_));
    add_work(attention_scratch_elements(B_, T_, NH_));
  }
  // FD: T^2 work per forward; sample the larger cases.
  size_t fd_max_points() const override { return T_ >= 32 ? 150 : 400; }
  std::vector<size_t> fd_extra_points(size_t) const override {
    // Every k and v column of the last kv head at the last position of batch 0 and the first
    // position of the last batch: each receives contributions from the whole query group.
    std::vector<size_t> p;
    const size_t last_kv = C() + size_t(NKV_ - 1) * hs_;
    for (size_t row : {size_t(T_ - 1), size_t(B_ - 1) * T_}) {
      for (int d = 0; d < hs_; ++d) {
        p.push_back(row * ld() + last_kv + d);
        p.push_back(row * ld() + last_kv + size_t(NKV_) * hs_ + d);
      }
    }
    return p;
  }
  OP_CASE_DISPATCH
  OP_CASE_CHECKS

 private:
  int C() const { return NH_ * hs_; }
  size_t ld() const { return size_t(NH_ + 2 * NKV_) * hs_; }
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    if (!fits_backend(ops, B_, T_, NH_)) return;
    ops.attention_forward(r.out[0].data(), r.out[1].data(), r.in[0].data(), B_, T_, C(), NH_, NKV_);
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    if (!fits_backend(ops, B_, T_, NH_)) return;
    ops.attention_backward(r.grad[0].data(), r.work[0].data(), r.dout[0].data(), r.in[0].data(),
                           r.out[0].data(), r.out[1].data(), B_, T_, C(), NH_, NKV_);
  }
  // out vs the reference (attention_reference.h) in long double (the saved state is checked
  // through the backward).
  template <class T>
  void chk(const Run<T>& r) const {
    expect_attention_matches_reference(name(), r.out[0],
                                       attention_reference(r.in[0], B_, T_, NH_, NKV_, hs_));
  }
  int B_, T_, NH_, NKV_, hs_;
};

// ---- token embedding without positions (wpe == nullptr) -------------------------------------

class EncoderNoPositionCase : public OpCase {
 public:
  EncoderNoPositionCase(int B, int T, int C, int Vp) : B_(B), T_(T), C_(C), Vp_(Vp) {}
  std::string name() const override {
    return dims("encoder_nopos", {{"B", B_}, {"T", T_}, {"C", C_}, {"Vp", Vp_}});
  }
  void build(Rng& rng) override {
    fill_normal(add_input("wte", size_t(Vp_) * C_), rng);
    // Few distinct tokens, so rows of dwte receive several contributions; the last row too.
    tokens_.resize(size_t(B_) * T_);
    for (auto& t : tokens_) t = static_cast<int32_t>(rng.below(std::min(Vp_, 4)));
    tokens_.back() = Vp_ - 1;
    add_output("out", size_t(B_) * T_ * C_, &rng);
  }
  OP_CASE_DISPATCH
  OP_CASE_CHECKS

 private:
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    ops.encoder_forward(r.out[0].data(), tokens_.data(), r.in[0].data(), nullptr, B_, T_, C_);
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    ops.encoder_backward(r.grad[0].data(), nullptr, r.dout[0].data(), tokens_.data(), B_, T_, C_);
  }
  // out is exactly the token's row.
  template <class T>
  void chk(const Run<T>& r) const {
    size_t wrong = 0;
    for (size_t bt = 0; bt < tokens_.size(); ++bt)
      wrong +=
          std::memcmp(&r.out[0][bt * C_], &r.in[0][size_t(tokens_[bt]) * C_], C_ * sizeof(T)) != 0;
    EXPECT_EQ(wrong, 0u) << name() << ": out rows must equal wte[token]";
  }
  int B_, T_, C_, Vp_;
  std::vector<int32_t> tokens_;
};

// ---- the grid --------------------------------------------------------------------------------

inline std::vector<CaseEntry> all_cases() {
  std::vector<CaseEntry> v;
  // rmsnorm: (N, C, -log10 eps); C = 1, C not a multiple of 8, a partial channel block (130),
  // GPT-2 width; eps 1e-2 makes eps visible in every row.
  v.push_back(entry<RmsNormCase>(1, 1, 5));
  v.push_back(entry<RmsNormCase>(1, 12, 6));
  v.push_back(entry<RmsNormCase>(7, 37, 5));
  v.push_back(entry<RmsNormCase>(13, 130, 2));
  v.push_back(entry<RmsNormCase>(5, 1025, 5));
  v.push_back(entry<RmsNormCase>(64, 768, 5));
  // rope: (B, T, heads, hs, extra columns, theta); hs = 2 (one pair), hs = 6 (odd half), the
  // qkv layout of Llama with v columns after q/k (extra), T = 1 (position 0 is the identity),
  // large theta (slow frequencies) and small theta (angles of many turns).
  v.push_back(entry<RopeCase>(1, 1, 1, 2, 0, 10000));
  v.push_back(entry<RopeCase>(2, 7, 3, 4, 5, 10000));
  v.push_back(entry<RopeCase>(3, 13, 5, 6, 7, 3));
  v.push_back(entry<RopeCase>(2, 9, 6, 16, 32, 500000));
  v.push_back(entry<RopeCase>(1, 37, 3, 64, 64, 10000));
  v.push_back(entry<RopeCase>(2, 33, 1, 128, 0, 1000000));
  // swiglu: (N, F)
  v.push_back(entry<SwigluCase>(1, 1));
  v.push_back(entry<SwigluCase>(7, 37));
  v.push_back(entry<SwigluCase>(13, 130));
  v.push_back(entry<SwigluCase>(3, 1025));
  v.push_back(entry<SwigluCase>(64, 352));
  // grouped-query attention: (B, T, NH, NKV, hs), NKV in {NH, NH/2, 1}; odd T, T crossing the
  // 16-key blocks of the backward, odd head counts and head sizes, groups of 2, 3 and 8.
  v.push_back(entry<GqaAttentionCase>(1, 1, 2, 1, 4));
  v.push_back(entry<GqaAttentionCase>(2, 7, 4, 4, 3));
  v.push_back(entry<GqaAttentionCase>(2, 7, 4, 2, 3));
  v.push_back(entry<GqaAttentionCase>(2, 7, 4, 1, 3));
  v.push_back(entry<GqaAttentionCase>(3, 13, 6, 3, 5));
  v.push_back(entry<GqaAttentionCase>(1, 13, 9, 3, 4));
  v.push_back(entry<GqaAttentionCase>(2, 13, 5, 1, 7));
  v.push_back(entry<GqaAttentionCase>(1, 33, 8, 1, 8));
  v.push_back(entry<GqaAttentionCase>(2, 37, 6, 2, 16));
  v.push_back(entry<GqaAttentionCase>(1, 70, 4, 2, 64));
  // encoder without position embedding: (B, T, C, Vp); C = 130 leaves a partial channel block.
  v.push_back(entry<EncoderNoPositionCase>(1, 1, 1, 1));
  v.push_back(entry<EncoderNoPositionCase>(3, 13, 37, 50));
  v.push_back(entry<EncoderNoPositionCase>(2, 33, 130, 60));
  return v;
}

}  // namespace gossamer::op_test::llama
