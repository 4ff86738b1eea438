// The GPT-2 op cases of the table-driven op tests (op_test_harness.h) and their grid of awkward
// shapes: encoder, layernorm, matmul, attention, gelu, crossentropy. Shared by the CPU test
// (test_ops.cpp) and the CUDA test (tests/gpu/test_cuda_ops.cpp), which run the same cases
// through their own op tables. Header-only test code.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "attention_reference.h"
#include "core/rng.h"
#include "kernels/cpu/layernorm.h"  // kLayerNormEps
#include "kernels/ops.h"
#include "op_test_harness.h"

namespace gossamer::op_test::gpt2 {

namespace cpu = gossamer::kernels::cpu;

// ---- the ops ---------------------------------------------------------------------------------

class EncoderCase : public OpCase {
 public:
  EncoderCase(int B, int T, int C, int Vp, int maxT) : B_(B), T_(T), C_(C), Vp_(Vp), maxT_(maxT) {}
  std::string name() const override {
    return dims("encoder", {{"B", B_}, {"T", T_}, {"C", C_}, {"Vp", Vp_}, {"maxT", maxT_}});
  }
  void build(Rng& rng) override {
    fill_normal(add_input("wte", size_t(Vp_) * C_), rng);
    fill_normal(add_input("wpe", size_t(maxT_) * C_), rng);
    // Few distinct tokens, so rows of dwte receive several contributions; the last row too.
    tokens_.resize(size_t(B_) * T_);
    for (auto& t : tokens_) t = static_cast<int32_t>(rng.below(std::min(Vp_, 4)));
    tokens_.back() = Vp_ - 1;
    add_output("out", size_t(B_) * T_ * C_, &rng);
  }
  OP_CASE_DISPATCH

 private:
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    ops.encoder_forward(r.out[0].data(), tokens_.data(), r.in[0].data(), r.in[1].data(), B_, T_,
                        C_);
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    ops.encoder_backward(r.grad[0].data(), r.grad[1].data(), r.dout[0].data(), tokens_.data(), B_,
                         T_, C_);
  }
  int B_, T_, C_, Vp_, maxT_;
  std::vector<int32_t> tokens_;
};

class LayerNormCase : public OpCase {
 public:
  LayerNormCase(int N, int C) : N_(N), C_(C) {}
  std::string name() const override { return dims("layernorm", {{"N", N_}, {"C", C_}}); }
  void build(Rng& rng) override {
    fill_normal(add_input("inp", size_t(N_) * C_), rng, 0.5, 2.0);  // offset: centring matters
    fill_normal(add_input("w", C_), rng, 1.0, 0.5);
    fill_normal(add_input("b", C_), rng, 0.0, 0.5);
    add_output("out", size_t(N_) * C_, &rng);
    add_output("mean", N_, nullptr);
    add_output("rstd", N_, nullptr);
  }
  // C = 1: dinp is 0 in real arithmetic, a difference of terms of size |dout w| rstd with
  // rstd = 1/sqrt(eps) ~ 316; float and double both return rounding noise of those terms.
  double err_floor() const override { return C_ == 1 ? 1.0 / std::sqrt(cpu::kLayerNormEps) : 0; }
  OP_CASE_DISPATCH

 private:
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    ops.layernorm_forward(r.out[0].data(), r.out[1].data(), r.out[2].data(), r.in[0].data(),
                          r.in[1].data(), r.in[2].data(), N_, C_);
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    ops.layernorm_backward(r.grad[0].data(), r.grad[1].data(), r.grad[2].data(), r.dout[0].data(),
                           r.in[0].data(), r.in[1].data(), r.out[1].data(), r.out[2].data(), N_,
                           C_);
  }
  int N_, C_;
};

class MatmulCase : public OpCase {
 public:
  MatmulCase(int N, int C, int OC, bool bias, bool dinp)
      : N_(N), C_(C), OC_(OC), bias_(bias), dinp_(dinp) {}
  std::string name() const override {
    return dims("matmul", {{"N", N_}, {"C", C_}, {"OC", OC_}, {"bias", bias_}, {"dinp", dinp_}});
  }
  void build(Rng& rng) override {
    fill_normal(add_input("inp", size_t(N_) * C_, dinp_), rng);
    fill_normal(add_input("w", size_t(OC_) * C_), rng);
    if (bias_) fill_normal(add_input("bias", OC_), rng);
    add_output("out", size_t(N_) * OC_, &rng);
  }
  OP_CASE_DISPATCH

 private:
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    ops.matmul_forward(r.out[0].data(), r.in[0].data(), r.in[1].data(),
                       bias_ ? r.in[2].data() : nullptr, N_, C_, OC_);
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    ops.matmul_backward(dinp_ ? r.grad[0].data() : nullptr, r.grad[1].data(),
                        bias_ ? r.grad[2].data() : nullptr, r.dout[0].data(), r.in[0].data(),
                        r.in[1].data(), N_, C_, OC_);
  }
  int N_, C_, OC_;
  bool bias_, dinp_;
};

class AttentionCase : public OpCase {
 public:
  AttentionCase(int B, int T, int C, int NH) : B_(B), T_(T), C_(C), NH_(NH) {}
  std::string name() const override {
    return dims("attention", {{"B", B_}, {"T", T_}, {"C", C_}, {"NH", NH_}, {"hs", C_ / NH_}});
  }
  void build(Rng& rng) override {
    fill_normal(add_input("qkv", size_t(B_) * T_ * 3 * C_), rng);
    add_output("out", size_t(B_) * T_ * C_, &rng);
    add_saved_state("saved", attention_saved_elements(B_, T_, NH_));
    add_work(attention_scratch_elements(B_, T_, NH_));
  }
  // FD: 64 random points of qkv per case plus the first and last; T^2 work per forward.
  size_t fd_max_points() const override { return T_ >= 64 ? 64 : 400; }
  OP_CASE_DISPATCH
  OP_CASE_CHECKS

 private:
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    if (!fits_backend(ops, B_, T_, NH_)) return;
    ops.attention_forward(r.out[0].data(), r.out[1].data(), r.in[0].data(), B_, T_, C_, NH_, NH_);
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    if (!fits_backend(ops, B_, T_, NH_)) return;
    ops.attention_backward(r.grad[0].data(), r.work[0].data(), r.dout[0].data(), r.in[0].data(),
                           r.out[0].data(), r.out[1].data(), B_, T_, C_, NH_, NH_);
  }
  // out vs the naive causal softmax in long double (the saved state is checked through the
  // backward).
  template <class T>
  void chk(const Run<T>& r) const {
    expect_attention_matches_reference(name(), r.out[0],
                                       attention_reference(r.in[0], B_, T_, NH_, NH_, C_ / NH_));
  }
  int B_, T_, C_, NH_;
};

class GeluCase : public OpCase {
 public:
  GeluCase(int n, bool in_place) : n_(n), in_place_(in_place) {}
  std::string name() const override { return dims("gelu", {{"n", n_}, {"inplace", in_place_}}); }
  void build(Rng& rng) override {
    auto& x = add_input("inp", n_);
    // Mostly the working range, some far tails (saturation and the capped exp) and zero.
    for (size_t k = 0; k < x.size(); ++k) {
      x[k] = k % 5 == 4 ? 24.0 * rng.uniform() - 12.0 : 2.0 * rng.normal();
    }
    x[0] = 0.0;
    add_output("out", n_, &rng);
  }
  OP_CASE_DISPATCH

 private:
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    if (in_place_) {
      std::copy_n(r.in[0].data(), n_, r.out[0].data());
      ops.gelu_forward(r.out[0].data(), r.out[0].data(), n_);
    } else {
      ops.gelu_forward(r.out[0].data(), r.in[0].data(), n_);
    }
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    ops.gelu_backward(r.grad[0].data(), r.in[0].data(), r.dout[0].data(), n_);
  }
  int n_;
  bool in_place_;
};

// crossentropy_forward then crossentropy_backward; or, fused, crossentropy_forward_backward,
// whose forward makes the losses and the dlogits at once (an output of its own, which the
// backward hands over as the gradient; "in place" is then dlogits over logits).
class CrossEntropyCase : public OpCase {
 public:
  CrossEntropyCase(int N, int V, int Vp, bool fwd_in_place, bool bwd_in_place, bool fused = false)
      : N_(N),
        V_(V),
        Vp_(Vp),
        fwd_in_place_(fwd_in_place),
        bwd_in_place_(bwd_in_place),
        fused_(fused) {}
  std::string name() const override {
    return dims(fused_ ? "crossentropy_fused" : "crossentropy", {{"N", N_},
                                                                 {"V", V_},
                                                                 {"Vp", Vp_},
                                                                 {"fwdinplace", fwd_in_place_},
                                                                 {"bwdinplace", bwd_in_place_}});
  }
  void build(Rng& rng) override {
    auto& x = add_input("logits", size_t(N_) * Vp_, true, /*grad_assigned=*/true);
    for (size_t k = 0; k < x.size(); ++k) {
      // Padded columns hold large values: any use of them would dominate the softmax.
      x[k] = int(k % Vp_) < V_ ? 3.0 * rng.normal() : 30.0;
    }
    targets_.resize(N_);
    for (auto& t : targets_) t = static_cast<int32_t>(rng.below(V_));
    targets_.back() = V_ - 1;
    scale_ = 1.75 / N_;
    add_output("losses", N_, std::vector<double>(N_, scale_));  // L = scale * sum_i losses_i
    add_output(fused_ ? "dlogits" : "probs", size_t(N_) * Vp_, nullptr);
  }
  // Most gradients here are probabilities times scale, ~1e-5, so the default atol would check
  // nothing. The FD rounding noise is ~|L| eps / 2h ~ 20 * 1e-16 / 2e-5 = 1e-10 (measured
  // 2e-10): atol 1e-9 keeps a 5x margin and resolves those gradients to ~1e-4 relative.
  double fd_atol() const override { return 1e-9; }
  size_t fd_max_points() const override { return V_ > 1000 ? 48 : 400; }
  std::vector<size_t> fd_extra_points(size_t) const override {
    std::vector<size_t> p;
    for (int i = 0; i < N_; ++i) {
      const size_t row = size_t(i) * Vp_;
      const auto& x = inputs()[0].value;
      p.push_back(row + targets_[i]);
      p.push_back(row +
                  (std::max_element(x.begin() + row, x.begin() + row + V_) - x.begin() - row));
      p.push_back(row + V_ - 1);
      if (Vp_ > V_) p.push_back(row + V_), p.push_back(row + Vp_ - 1);
    }
    return p;
  }
  OP_CASE_DISPATCH
  OP_CASE_CHECKS

 private:
  template <class T>
  void fwd(const Ops<T>& ops, Run<T>& r) {
    if (fused_) {
      T* dlogits = r.out[1].data();
      const T* logits = r.in[0].data();
      if (fwd_in_place_) std::copy_n(logits, size_t(N_) * Vp_, dlogits), logits = dlogits;
      ops.crossentropy_forward_backward(r.out[0].data(), dlogits, logits, targets_.data(),
                                        static_cast<T>(scale_), N_, V_, Vp_);
      return;
    }
    T* probs = r.out[1].data();
    if (fwd_in_place_) {
      std::copy_n(r.in[0].data(), size_t(N_) * Vp_, probs);
      ops.crossentropy_forward(r.out[0].data(), probs, probs, targets_.data(), N_, V_, Vp_);
    } else {
      ops.crossentropy_forward(r.out[0].data(), probs, r.in[0].data(), targets_.data(), N_, V_,
                               Vp_);
    }
  }
  template <class T>
  void bwd(const Ops<T>& ops, Run<T>& r) {
    T* dlogits = r.grad[0].data();
    if (fused_) {  // the forward's dlogits
      std::copy_n(r.out[1].data(), size_t(N_) * Vp_, dlogits);
      return;
    }
    const T* probs = r.out[1].data();
    if (bwd_in_place_) {
      std::copy_n(probs, size_t(N_) * Vp_, dlogits);
      probs = dlogits;
    }
    ops.crossentropy_backward(dlogits, probs, targets_.data(), static_cast<T>(scale_), N_, V_, Vp_);
  }
  // Padded columns 0; rows of probs sum to 1 (fused: rows of dlogits, scale (p - onehot), to 0).
  template <class T>
  void chk(const Run<T>& r) const {
    size_t pad_nonzero = 0, bad_rows = 0;
    const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
    const double want = fused_ ? 0.0 : 1.0, unit = fused_ ? scale_ : 1.0;
    for (int i = 0; i < N_; ++i) {
      double sum = 0;
      for (int j = 0; j < Vp_; ++j) {
        const size_t k = size_t(i) * Vp_ + j;
        if (j >= V_) pad_nonzero += (r.out[1][k] != T(0)) + (r.grad[0][k] != T(0));
        sum += r.out[1][k];
      }
      bad_rows += !(std::fabs(sum / unit - want) <= tol);
    }
    EXPECT_EQ(pad_nonzero, 0u) << name() << ": padded columns must get probs 0 and dlogits 0";
    EXPECT_EQ(bad_rows, 0u) << name()
                            << (fused_ ? ": dlogits rows must sum to 0"
                                       : ": probs rows must sum to 1");
  }
  int N_, V_, Vp_;
  bool fwd_in_place_, bwd_in_place_, fused_;
  double scale_ = 1.0;
  std::vector<int32_t> targets_;
};

// ---- the grid --------------------------------------------------------------------------------

inline std::vector<CaseEntry> all_cases() {
  std::vector<CaseEntry> v;
  // encoder: (B, T, C, Vp, maxT); C = 130 leaves a partial channel block of the backward.
  v.push_back(entry<EncoderCase>(1, 1, 1, 1, 1));
  v.push_back(entry<EncoderCase>(2, 7, 12, 9, 10));
  v.push_back(entry<EncoderCase>(3, 13, 37, 50, 16));
  v.push_back(entry<EncoderCase>(2, 33, 130, 60, 40));
  // layernorm: (N, C); C = 1 has zero variance.
  v.push_back(entry<LayerNormCase>(1, 1));
  v.push_back(entry<LayerNormCase>(1, 12));
  v.push_back(entry<LayerNormCase>(7, 37));
  v.push_back(entry<LayerNormCase>(13, 130));
  v.push_back(entry<LayerNormCase>(64, 768));
  // matmul: (N, C, OC, bias, dinp)
  v.push_back(entry<MatmulCase>(1, 1, 1, true, true));
  v.push_back(entry<MatmulCase>(7, 37, 19, true, true));
  v.push_back(entry<MatmulCase>(13, 12, 48, false, true));
  v.push_back(entry<MatmulCase>(5, 37, 19, true, false));
  v.push_back(entry<MatmulCase>(33, 130, 67, true, true));
  v.push_back(entry<MatmulCase>(16, 768, 72, true, true));
  v.push_back(entry<MatmulCase>(4, 0, 6, true, true));  // an empty product: out = bias
  // attention: (B, T, C, NH), odd T and odd head sizes, T = 1, and the GPT-2 head size 64.
  v.push_back(entry<AttentionCase>(1, 1, 12, 3));
  v.push_back(entry<AttentionCase>(2, 7, 12, 4));
  v.push_back(entry<AttentionCase>(1, 13, 37, 1));
  v.push_back(entry<AttentionCase>(2, 13, 35, 5));
  v.push_back(entry<AttentionCase>(1, 9, 8, 8));
  v.push_back(entry<AttentionCase>(3, 5, 21, 3));
  v.push_back(entry<AttentionCase>(2, 33, 20, 4));
  v.push_back(entry<AttentionCase>(1, 100, 64, 2));
  v.push_back(entry<AttentionCase>(1, 64, 768, 12));
  // gelu: (n, in place); 70001 takes the multi-threaded path.
  v.push_back(entry<GeluCase>(1, false));
  v.push_back(entry<GeluCase>(37, false));
  v.push_back(entry<GeluCase>(37, true));
  v.push_back(entry<GeluCase>(1025, false));
  v.push_back(entry<GeluCase>(70001, true));
  // crossentropy: (N, V, Vp, forward in place, backward in place); GPT-2's padded vocabulary.
  v.push_back(entry<CrossEntropyCase>(1, 1, 8, false, false));
  v.push_back(entry<CrossEntropyCase>(3, 37, 48, false, false));
  v.push_back(entry<CrossEntropyCase>(3, 37, 48, true, false));
  v.push_back(entry<CrossEntropyCase>(3, 37, 48, false, true));
  v.push_back(entry<CrossEntropyCase>(7, 5, 5, true, true));
  v.push_back(entry<CrossEntropyCase>(2, 50257, 50304, false, false));
  v.push_back(entry<CrossEntropyCase>(1, 50257, 50304, true, true));
  // fused: (N, V, Vp, dlogits over logits).
  v.push_back(entry<CrossEntropyCase>(1, 1, 8, false, false, true));
  v.push_back(entry<CrossEntropyCase>(3, 37, 48, false, false, true));
  v.push_back(entry<CrossEntropyCase>(3, 37, 48, true, false, true));
  v.push_back(entry<CrossEntropyCase>(7, 5, 5, true, false, true));
  v.push_back(entry<CrossEntropyCase>(2, 50257, 50304, true, false, true));
  return v;
}

}  // namespace gossamer::op_test::gpt2
