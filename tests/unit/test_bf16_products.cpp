// Matrix products with bf16 operands (kernels.matmul_dtype = bf16): the CPU ops against a
// reference that rounds with its own code (frexp / nearbyint, not core/bf16.h's bit rule) and
// sums in long double; ties to even; the models in bf16 against the same models in fp32 (close,
// not equal), the bf16 mirror of the weights refreshed at each forward, and the bf16 model on
// the guarded device table equal to the CPU one bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "guarded_device_ops.h"
#include "kernels/cpu/gemm.h"
#include "kernels/ops.h"
#include "model/decoder_model.h"
#include "model/host_params.h"
#include "model/model.h"
#include "op_test_harness.h"
#include "test_util.h"

using namespace gossamer;
using gossamer::testing::relative_distance;
using op_test::Guarded;

namespace {

// x rounded to bf16 (8 significant bits), nearest with ties to even; x normal or zero.
long double bf16_round(double x) {
  if (x == 0) return 0;
  int e = 0;
  const double m = std::frexp(x, &e);                          // x = m 2^e, 0.5 <= |m| < 1
  return std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);  // FE_TONEAREST: ties to even
}

// The bits of a value that is exactly a bf16: the upper half of its fp32 bits.
uint16_t bf16_bits(long double exact) {
  const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(exact));
  EXPECT_EQ(bits & 0xFFFFu, 0u) << "not a bf16 value";
  return uint16_t(bits >> 16);
}

// Values over four decades with both signs: most are not bf16 values.
template <class T>
Guarded<T> spread_values(size_t n, uint64_t seed) {
  Rng rng(seed);
  Guarded<T> g(n, T(0));
  for (size_t i = 0; i < n; ++i) {
    const double v = (0.1 + rng.uniform()) * std::pow(10.0, int(rng.below(4)) - 2);
    // Floats for both tables: the double table rounds to bf16 through float (elementwise.h), so
    // the double reference here rounds the same values.
    g[i] = static_cast<T>(static_cast<float>(rng.below(2) ? v : -v));
  }
  return g;
}

// max |got - want| / RMS(want), over n values; NaN when any difference is NaN (an unwritten,
// NaN-prefilled output fails).
template <class T>
double scaled_error(const T* got, const std::vector<long double>& want) {
  long double ss = 0, worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ss += want[i] * want[i];
    const long double d = std::fabs(static_cast<long double>(got[i]) - want[i]);
    if (!(d <= worst)) worst = d;  // NaN sticks
  }
  const long double rms = std::sqrt(ss / std::max<size_t>(want.size(), 1));
  return double(worst / std::max<long double>(rms, 1e-30L));
}

struct Shape {
  int N, C, OC;
};

template <class T>
void check_products(const op_test::Ops<T>& ops, Shape s, double tol) {
  const auto [N, C, OC] = s;
  const size_t nc = size_t(N) * C, oc_c = size_t(OC) * C, n_oc = size_t(N) * OC;
  const Guarded<T> inp = spread_values<T>(nc, 1), bias = spread_values<T>(OC, 2),
                   dout = spread_values<T>(n_oc, 3), pre_dinp = spread_values<T>(nc, 4),
                   pre_dw = spread_values<T>(oc_c, 5), pre_dbias = spread_values<T>(OC, 6);
  const Guarded<T> w_full = spread_values<T>(oc_c, 7);
  Guarded<uint16_t> w(oc_c, 0);
  std::vector<long double> w_r(oc_c), inp_r(nc), dout_r(n_oc);
  for (size_t i = 0; i < oc_c; ++i)
    w_r[i] = bf16_round(double(w_full[i])), w[i] = bf16_bits(w_r[i]);
  for (size_t i = 0; i < nc; ++i) inp_r[i] = bf16_round(double(inp[i]));
  for (size_t i = 0; i < n_oc; ++i) dout_r[i] = bf16_round(double(dout[i]));

  const size_t scratch_bytes = ops.matmul_bf16_scratch_bytes(N, C, OC);
  Guarded<unsigned char> scratch(scratch_bytes, 0);
  Guarded<T> out(n_oc, T(NAN)), dinp = pre_dinp, dw = pre_dw, dbias = pre_dbias;
  ops.matmul_bf16_forward(out.data(), inp.data(), w.data(), bias.data(), N, C, OC, scratch.data());
  ops.matmul_bf16_backward(dinp.data(), dw.data(), dbias.data(), dout.data(), inp.data(), w.data(),
                           N, C, OC, scratch.data());

  std::vector<long double> want_out(n_oc), want_dinp(nc), want_dw(oc_c), want_dbias(OC);
  for (int n = 0; n < N; ++n)
    for (int j = 0; j < OC; ++j) {
      long double acc = bias[j];
      for (int c = 0; c < C; ++c) acc += inp_r[size_t(n) * C + c] * w_r[size_t(j) * C + c];
      want_out[size_t(n) * OC + j] = acc;
    }
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) {
      long double acc = pre_dinp[size_t(n) * C + c];
      for (int j = 0; j < OC; ++j) acc += dout_r[size_t(n) * OC + j] * w_r[size_t(j) * C + c];
      want_dinp[size_t(n) * C + c] = acc;
    }
  for (int j = 0; j < OC; ++j) {
    for (int c = 0; c < C; ++c) {
      long double acc = pre_dw[size_t(j) * C + c];
      for (int n = 0; n < N; ++n) acc += dout_r[size_t(n) * OC + j] * inp_r[size_t(n) * C + c];
      want_dw[size_t(j) * C + c] = acc;
    }
    long double acc = pre_dbias[j];  // from the unrounded dout
    for (int n = 0; n < N; ++n) acc += dout[size_t(n) * OC + j];
    want_dbias[j] = acc;
  }
  const char* type = sizeof(T) == 4 ? "float" : "double";
  EXPECT_LE(scaled_error(out.data(), want_out), tol)
      << "out, " << type << " " << N << "x" << C << "x" << OC;
  EXPECT_LE(scaled_error(dinp.data(), want_dinp), tol) << "dinp, " << type;
  EXPECT_LE(scaled_error(dw.data(), want_dw), tol) << "dw, " << type;
  EXPECT_LE(scaled_error(dbias.data(), want_dbias), tol) << "dbias, " << type;
  for (const auto* g : {&out, &dinp, &dw, &dbias}) EXPECT_TRUE(g->guards_intact()) << type;
  EXPECT_TRUE(w.guards_intact() && scratch.guards_intact()) << type;

  // The rounding is not a no-op: the fp32 product of the unrounded operands differs.
  if (C >= 16) {
    Guarded<T> exact(n_oc, T(NAN));
    ops.matmul_forward(exact.data(), inp.data(), w_full.data(), bias.data(), N, C, OC);
    EXPECT_GT(scaled_error(exact.data(), want_out), 1e-4) << "the bf16 reference is the fp32 one";
  }
}

const Shape kShapes[] = {{5, 7, 3}, {33, 65, 17}, {1, 1025, 6}, {64, 48, 130}};

}  // namespace

// The float table takes oneDNN's bf16 kernels where this CPU has bf16 instructions (the CI
// machines do), else the emulation the double table always takes; both against one reference.
TEST(Bf16Products, CpuFloatMatchesTheRoundedReference) {
  std::printf("float table's bf16 products: %s\n",
              kernels::cpu::gemm_bf16_native()
                  ? ("oneDNN " + kernels::cpu::gemm_bf16_implementation()).c_str()
                  : "emulated (rounded operands, fp32 gemm)");
  for (const Shape& s : kShapes) check_products(kernels::cpu_ops(), s, 2e-6);
}

TEST(Bf16Products, CpuDoubleMatchesTheRoundedReference) {
  for (const Shape& s : kShapes) check_products(kernels::cpu_ops_f64(), s, 1e-13);
}

// Halfway cases round to the even neighbour: 1 + 2^-8 to 1, 1 + 3 2^-8 to 1 + 2^-6, and a value
// just above a halfway point rounds up. A truncating or round-half-up conversion fails.
TEST(Bf16Products, TiesGoToEven) {
  const kernels::OpTable& ops = kernels::cpu_ops();
  const std::vector<float> x = {1 + 0x1p-8f, 1 + 3 * 0x1p-8f, -(1 + 0x1p-8f),
                                1 + 0x1p-8f + 0x1p-20f, 2 - 0x1p-9f};
  const std::vector<float> want = {1, 1 + 0x1p-6f, -1, 1 + 0x1p-7f, 2};
  const int N = int(x.size());
  const uint16_t one = 0x3F80;  // 1.0
  std::vector<unsigned char> scratch(ops.matmul_bf16_scratch_bytes(N, 1, 1));
  std::vector<float> out(N, NAN);
  ops.matmul_bf16_forward(out.data(), x.data(), &one, nullptr, N, 1, 1, scratch.data());
  for (int i = 0; i < N; ++i) EXPECT_EQ(out[i], want[i]) << "x = " << x[i];
  // dw = sum_n bf16(dout_n) bf16(inp_n) with inp = 1: the rounded douts' sum, exactly.
  std::vector<float> ones(N, 1.0f);
  float dw = 0, want_dw = 0;
  for (float v : want) want_dw += v;
  ops.matmul_bf16_backward(nullptr, &dw, nullptr, x.data(), ones.data(), &one, N, 1, 1,
                           scratch.data());
  EXPECT_EQ(dw, want_dw);
}

namespace {

model::ModelConfig tiny(model::ModelFamily family) {
  model::ModelConfig cfg;
  cfg.family = family;
  cfg.n_layer = 2, cfg.n_head = 4, cfg.d_model = 32, cfg.vocab_size = 97, cfg.max_seq_len = 16;
  if (family == model::ModelFamily::MODEL_FAMILY_LLAMA) cfg.n_kv_head = 2;
  return cfg;
}

struct Pass {
  float loss;
  std::vector<float> grads;
};

Pass forward_backward(model::Model& m, const std::vector<int32_t>& tok,
                      const std::vector<int32_t>& tgt, int B, int T) {
  m.zero_grad();
  Pass p;
  p.loss = m.forward(tok.data(), tgt.data(), B, T);
  m.backward(1.0f);
  p.grads.resize(m.grads().size());
  m.memory().download(p.grads.data(), m.grads().data(), p.grads.size() * sizeof(float));
  return p;
}

void scale_params(model::Model& m, float s) {
  model::HostParamsEdit edit(m, true);
  for (float& x : edit.span()) x *= s;
  edit.commit();
}

}  // namespace

class Bf16Model : public ::testing::TestWithParam<model::ModelFamily> {};

TEST_P(Bf16Model, TracksTheFp32ModelAndSeesEveryWeightUpdate) {
  const model::ModelConfig cfg = tiny(GetParam());
  const int B = 2, T = 12;
  Rng rng(11);
  std::vector<int32_t> tok(B * T), tgt(B * T);
  for (auto* v : {&tok, &tgt})
    for (int32_t& t : *v) t = int32_t(rng.below(cfg.vocab_size));
  const auto bf16 = kernels::MatmulDtype::MATMUL_DTYPE_BF16;
  auto m32 = model::make_model(cfg, B, T, kernels::cpu_ops());
  auto m16 = model::make_model(cfg, B, T, kernels::cpu_ops(), bf16);
  auto dev16 = model::make_model(cfg, B, T, gossamer::testing::guarded_device_ops(), bf16);
  for (auto* m : {m32.get(), m16.get(), dev16.get()}) m->init_weights(5);

  // At 1.5 every weight has changed since the last forward, as after an optimizer step: a stale
  // bf16 mirror would miss the fp32 loss by far more than the tolerance.
  for (float s : {1.0f, 1.5f}) {
    if (s != 1.0f)
      for (auto* m : {m32.get(), m16.get(), dev16.get()}) scale_params(*m, s);
    const Pass a = forward_backward(*m32, tok, tgt, B, T);
    const Pass b = forward_backward(*m16, tok, tgt, B, T);
    const Pass c = forward_backward(*dev16, tok, tgt, B, T);
    const double dl = std::fabs(double(b.loss) - a.loss) / a.loss;
    const double dg = relative_distance(b.grads, a.grads);
    std::printf("scale %.1f: loss %.6f (fp32 %.6f), relative gradient distance %.2e\n", s, b.loss,
                a.loss, dg);
    EXPECT_GT(dl, 0) << "bf16 products give the fp32 loss exactly: not used?";
    EXPECT_LT(dl, 1e-3) << "loss " << b.loss << " vs fp32 " << a.loss << ", scale " << s;
    EXPECT_GT(dg, 1e-5) << "scale " << s;
    EXPECT_LT(dg, 2e-2) << "gradient distance, scale " << s;
    EXPECT_EQ(b.loss, c.loss) << "the guarded device table, scale " << s;
    EXPECT_EQ(std::memcmp(b.grads.data(), c.grads.data(), b.grads.size() * sizeof(float)), 0)
        << "the guarded device table's gradients, scale " << s;
  }
}

// The products in row chunks (the LM head's in one-row chunks here): the same loss and
// gradients as in one call, up to fp32 summation order (dw and dbias add up chunk by chunk).
TEST_P(Bf16Model, RowChunksGiveTheSameResults) {
  const model::ModelConfig cfg = tiny(GetParam());
  const int B = 2, T = 12;
  Rng rng(12);
  std::vector<int32_t> tok(B * T), tgt(B * T);
  for (auto* v : {&tok, &tgt})
    for (int32_t& t : *v) t = int32_t(rng.below(cfg.vocab_size));
  const auto bf16 = kernels::MatmulDtype::MATMUL_DTYPE_BF16;
  auto whole = model::make_model(cfg, B, T, kernels::cpu_ops(), bf16);
  auto chunked = model::make_model(cfg, B, T, kernels::cpu_ops(), bf16);
  dynamic_cast<model::DecoderModel&>(*chunked).set_linear_chunk_elems(200);
  whole->init_weights(6);
  chunked->init_weights(6);
  const Pass a = forward_backward(*whole, tok, tgt, B, T);
  const Pass b = forward_backward(*chunked, tok, tgt, B, T);
  EXPECT_NEAR(b.loss, a.loss, 1e-5 * a.loss);
  EXPECT_LT(relative_distance(b.grads, a.grads), 1e-5);
  EXPECT_THROW(dynamic_cast<model::DecoderModel&>(*chunked).set_linear_chunk_elems(0), Error);
}

INSTANTIATE_TEST_SUITE_P(Families, Bf16Model,
                         ::testing::Values(model::ModelFamily::MODEL_FAMILY_GPT2,
                                           model::ModelFamily::MODEL_FAMILY_LLAMA),
                         [](const auto& i) { return std::string(model::family_name(i.param)); });
