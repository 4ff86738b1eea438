// The LM head fused with the cross-entropy (model/decoder_model.h): the fused cross-entropy op
// gives the bits of the two it replaces; row chunks give the loss
// and gradients of one chunk, in fp32 and bf16, for both families; backward()'s grad_scale
// scales every gradient (the head's were made in the forward); eval_loss() is the training
// forward's loss without gradient work and prepares no backward; a training step allocates
// nothing and keeps no (B,T,Vp) logits, which exist only after a forward without targets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/buffer.h"
#include "core/error.h"
#include "core/rng.h"
#include "kernels/ops.h"
#include "model/decoder_model.h"
#include "model/model.h"
#include "test_util.h"

using namespace gossamer;
using gossamer::testing::relative_distance;

namespace {

using Family = model::ModelFamily;
using Dtype = kernels::MatmulDtype;

model::ModelConfig tiny(Family family, int vocab = 97) {
  model::ModelConfig cfg;
  cfg.family = family;
  cfg.n_layer = 2, cfg.n_head = 4, cfg.d_model = 32, cfg.vocab_size = vocab, cfg.max_seq_len = 32;
  if (family == Family::MODEL_FAMILY_LLAMA) cfg.n_kv_head = 2;
  return cfg;
}

std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = int32_t(rng.below(uint64_t(vocab)));
  return t;
}

std::vector<float> grads_of(const model::Model& m) {
  std::vector<float> g(m.grads().size());
  m.memory().download(g.data(), m.grads().data(), g.size() * sizeof(float));
  return g;
}

struct Pass {
  float loss;
  std::vector<float> grads;
};

Pass train_pass(model::Model& m, const std::vector<int32_t>& tok, const std::vector<int32_t>& tgt,
                int B, int T, float grad_scale = 1.0f) {
  m.zero_grad();
  Pass p;
  p.loss = m.forward(tok.data(), tgt.data(), B, T);
  m.backward(grad_scale);
  p.grads = grads_of(m);
  return p;
}

}  // namespace

// The fused op gives crossentropy_forward's losses and crossentropy_backward's dlogits of its
// probabilities bit for bit (the model's training forward calls it where the two ran before),
// in place or not, on the float and double tables.
template <class T>
void check_fused_crossentropy(const kernels::BasicOpTable<T>& ops) {
  const int N = 5, V = 1000, Vp = 1024;
  const T scale = T(1.0 / 3.0);
  Rng rng(13);
  std::vector<T> logits(size_t(N) * Vp);
  for (T& x : logits) x = T(4.0 * rng.normal());
  const auto targets = random_tokens(N, V, 14);
  std::vector<T> probs(logits.size()), losses(N), want(logits.size());
  ops.crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp);
  ops.crossentropy_backward(want.data(), probs.data(), targets.data(), scale, N, V, Vp);
  for (bool in_place : {false, true}) {
    std::vector<T> got_losses(N, T(NAN)), got(logits.size(), T(NAN));
    const T* in = logits.data();
    if (in_place) got = logits, in = got.data();
    ops.crossentropy_forward_backward(got_losses.data(), got.data(), in, targets.data(), scale, N,
                                      V, Vp);
    EXPECT_EQ(std::memcmp(got_losses.data(), losses.data(), N * sizeof(T)), 0) << in_place;
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(T)), 0) << in_place;
  }
}

TEST(FusedCrossEntropy, GivesTheBitsOfForwardThenBackward) {
  check_fused_crossentropy(kernels::cpu_ops());
  check_fused_crossentropy(kernels::cpu_ops_f64());
}

class LmHead : public ::testing::TestWithParam<std::tuple<Family, Dtype>> {};

// The head in chunks of 1 and 3 rows (and the bf16 products with them) against one chunk: the
// same loss and gradients up to fp32 summation order (the head's gradients add up chunk by
// chunk), twice in a row (each forward starts its sums afresh).
TEST_P(LmHead, RowChunksGiveTheLossAndGradientsOfOneChunk) {
  const auto [family, dtype] = GetParam();
  const model::ModelConfig cfg = tiny(family);
  const int B = 2, T = 13, Vp = cfg.padded_vocab_resolved();
  const auto tok = random_tokens(B * T, cfg.vocab_size, 1);
  const auto tgt = random_tokens(B * T, cfg.vocab_size, 2);
  auto whole = model::make_model(cfg, B, T, kernels::cpu_ops(), dtype);
  whole->init_weights(3);
  const Pass a = train_pass(*whole, tok, tgt, B, T);
  ASSERT_TRUE(std::isfinite(a.loss));
  for (int rows : {1, 3}) {
    auto chunked = model::make_model(cfg, B, T, kernels::cpu_ops(), dtype);
    dynamic_cast<model::DecoderModel&>(*chunked).set_linear_chunk_elems(size_t(rows) * Vp);
    chunked->init_weights(3);
    for (int repeat = 0; repeat < 2; ++repeat) {
      const Pass b = train_pass(*chunked, tok, tgt, B, T);
      EXPECT_NEAR(b.loss, a.loss, 1e-6 * a.loss) << rows << " rows";
      EXPECT_LT(relative_distance(b.grads, a.grads), 1e-5) << rows << " rows";
    }
  }
}

// backward(s) = s * backward(1): by a power of two exactly (every gradient is linear in the
// loss's, and halving is exact, in bf16 too), by 3 to rounding; a forward with targets is
// needed again.
TEST_P(LmHead, GradScaleScalesEveryGradient) {
  const auto [family, dtype] = GetParam();
  const model::ModelConfig cfg = tiny(family);
  const int B = 2, T = 13;
  const auto tok = random_tokens(B * T, cfg.vocab_size, 4);
  const auto tgt = random_tokens(B * T, cfg.vocab_size, 5);
  auto m = model::make_model(cfg, B, T, kernels::cpu_ops(), dtype);
  dynamic_cast<model::DecoderModel&>(*m).set_linear_chunk_elems(size_t(5) * 128);
  m->init_weights(6);
  const Pass one = train_pass(*m, tok, tgt, B, T, 1.0f);
  const Pass half = train_pass(*m, tok, tgt, B, T, 0.5f);
  const Pass three = train_pass(*m, tok, tgt, B, T, 3.0f);
  size_t wrong = 0;
  std::vector<float> tripled(one.grads.size());
  for (size_t i = 0; i < one.grads.size(); ++i) {
    wrong += half.grads[i] != 0.5f * one.grads[i];
    tripled[i] = 3.0f * one.grads[i];
  }
  EXPECT_EQ(wrong, 0u) << "of " << one.grads.size() << " gradients";
  // bf16: each product rounds its scaled dout again (2^-9 relative at most).
  EXPECT_LT(relative_distance(three.grads, tripled),
            dtype == Dtype::MATMUL_DTYPE_BF16 ? 4e-3 : 1e-6);
  EXPECT_THROW(m->backward(1.0f), Error);  // spent by the last backward
}

namespace {

// The CPU table with its gradient ops counted: the products' backward and the cross-entropy's.
int g_gradient_ops = 0;
kernels::OpTable counting_gradient_ops() {
  kernels::OpTable t = kernels::cpu_ops();
  t.matmul_backward = [](auto... a) { ++g_gradient_ops, kernels::cpu_ops().matmul_backward(a...); };
  t.matmul_bf16_backward = [](auto... a) {
    ++g_gradient_ops, kernels::cpu_ops().matmul_bf16_backward(a...);
  };
  t.crossentropy_backward = [](auto... a) {
    ++g_gradient_ops, kernels::cpu_ops().crossentropy_backward(a...);
  };
  t.crossentropy_forward_backward = [](auto... a) {
    ++g_gradient_ops, kernels::cpu_ops().crossentropy_forward_backward(a...);
  };
  return t;
}

}  // namespace

// eval_loss: the training forward's loss to the bit with no gradient op called, backward refused
// (also when a training forward came before it: eval_loss replaced its batch).
TEST_P(LmHead, EvalLossIsTheTrainingLossWithoutGradientWork) {
  const auto [family, dtype] = GetParam();
  const model::ModelConfig cfg = tiny(family);
  const int B = 3, T = 11;
  const auto tok = random_tokens(B * T, cfg.vocab_size, 7);
  const auto tgt = random_tokens(B * T, cfg.vocab_size, 8);
  const kernels::OpTable ops = counting_gradient_ops();
  auto m = model::make_model(cfg, B, T, ops, dtype);
  dynamic_cast<model::DecoderModel&>(*m).set_linear_chunk_elems(size_t(4) * 128);
  m->init_weights(9);
  m->zero_grad();
  g_gradient_ops = 0;
  const float evaluated = m->eval_loss(tok.data(), tgt.data(), B, T);
  EXPECT_EQ(g_gradient_ops, 0);
  EXPECT_EQ(m->forward_backward_seconds(), 0.0) << "no backward work in evaluation";
  EXPECT_THROW(m->backward(1.0f), Error);
  const float trained = m->forward(tok.data(), tgt.data(), B, T);
  EXPECT_EQ(evaluated, trained);
  EXPECT_GT(m->forward_backward_seconds(), 0.0) << "the head's gradient products, timed";
  const int rows = std::max(1, 4 * 128 / std::max(cfg.d_model, cfg.padded_vocab_resolved()));
  EXPECT_EQ(g_gradient_ops, 2 * ((B * T + rows - 1) / rows));  // per chunk: cross-entropy, product
  g_gradient_ops = 0;
  EXPECT_EQ(m->eval_loss(tok.data(), tgt.data(), B, T), trained);
  EXPECT_EQ(g_gradient_ops, 0);
  EXPECT_EQ(m->forward_backward_seconds(), 0.0);
  EXPECT_THROW(m->backward(1.0f), Error);
  const std::vector<float> g = grads_of(*m);
  EXPECT_EQ(size_t(std::count(g.begin(), g.end(), 0.0f)), g.size());
  EXPECT_EQ(m->readable_logits(), 0u);
  EXPECT_THROW(m->eval_loss(tok.data(), nullptr, B, T), Error);
}

INSTANTIATE_TEST_SUITE_P(
    FamiliesAndDtypes, LmHead,
    ::testing::Combine(::testing::Values(Family::MODEL_FAMILY_GPT2, Family::MODEL_FAMILY_LLAMA),
                       ::testing::Values(Dtype::MATMUL_DTYPE_FP32, Dtype::MATMUL_DTYPE_BF16)),
    [](const auto& i) {
      return std::string(model::family_name(std::get<0>(i.param))) +
             (std::get<1>(i.param) == Dtype::MATMUL_DTYPE_BF16 ? "_bf16" : "_fp32");
    });

namespace {

// Host memory that counts what is allocated and live.
struct Tally {
  size_t allocs = 0, live = 0;
} g_tally;

const MemoryOps kTallied{
    .backend = "tallied-host",
    .host_accessible = true,
    .alloc =
        [](size_t bytes) { return ++g_tally.allocs, g_tally.live += bytes, host_alloc(bytes); },
    .free = [](void* p, size_t bytes) { g_tally.live -= bytes, host_free(p, bytes); },
    .zero = [](void* p, size_t bytes) { std::memset(p, 0, bytes); },
    .upload = [](void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); },
    .download = [](void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); },
    .copy = [](void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); },
};

}  // namespace

// A vocabulary of 50257 at B = 4, T = 32: the logits would be 25.8 MB, more than all the
// model's memory with the head in chunks of 16 rows, before and after training. Evaluation
// allocates nothing; the first training step allocates the head's two gradients, later steps
// nothing; the first forward without targets grows the chunk's buffer to (B, max_seq, Vp)
// logits in its place, and smaller ones reuse it, as sampling does (one position more per
// call), as does training after it.
TEST(LmHeadMemory, TrainingKeepsNoFullLogits) {
  kernels::OpTable ops = kernels::cpu_ops();
  ops.memory = &kTallied;
  for (Family family : {Family::MODEL_FAMILY_GPT2, Family::MODEL_FAMILY_LLAMA}) {
    SCOPED_TRACE(model::family_name(family));
    model::ModelConfig cfg = tiny(family, 50257);
    cfg.n_layer = 1, cfg.d_model = 16;
    const int B = 4, T = 32, C = cfg.d_model, Vp = cfg.padded_vocab_resolved();
    const size_t logits_bytes = size_t(B) * T * Vp * sizeof(float);
    const auto tok = random_tokens(B * T, cfg.vocab_size, 10);
    const auto tgt = random_tokens(B * T, cfg.vocab_size, 11);
    g_tally = {};
    {
      auto m = model::make_model(cfg, B, T, ops);
      dynamic_cast<model::DecoderModel&>(*m).set_linear_chunk_elems(size_t(16) * Vp);
      m->init_weights(12);
      const size_t model_bytes = g_tally.live, allocs = g_tally.allocs;
      ASSERT_TRUE(std::isfinite(m->eval_loss(tok.data(), tgt.data(), B, T)));
      EXPECT_EQ(g_tally.allocs, allocs);
      for (int step = 0; step < 3; ++step) {
        m->zero_grad();
        ASSERT_TRUE(std::isfinite(m->forward(tok.data(), tgt.data(), B, T)));
        m->backward(1.0f);
        ASSERT_TRUE(std::isfinite(m->eval_loss(tok.data(), tgt.data(), B, T)));
        EXPECT_EQ(g_tally.allocs, allocs + 2) << "step " << step;
      }
      const size_t trained_bytes = g_tally.live, chunk_bytes = size_t(16) * Vp * sizeof(float);
      EXPECT_EQ(trained_bytes, model_bytes + (size_t(Vp) * C + size_t(B) * T * C) * sizeof(float));
      EXPECT_LT(trained_bytes, logits_bytes);
      for (int t = 1; t <= T; ++t) m->forward(tok.data(), nullptr, 1, t);  // 16 rows: no growth
      EXPECT_EQ(g_tally.allocs, allocs + 3);  // past 16 rows: T rows, in the chunk's place
      EXPECT_EQ(g_tally.live, trained_bytes - chunk_bytes + logits_bytes / B);
      EXPECT_EQ(m->readable_logits(), size_t(T) * Vp);
      m->forward(tok.data(), nullptr, B, T);
      EXPECT_EQ(g_tally.allocs, allocs + 4);
      EXPECT_EQ(g_tally.live, trained_bytes - chunk_bytes + logits_bytes);
      EXPECT_EQ(m->readable_logits(), size_t(B) * T * Vp);
      m->forward(tok.data(), nullptr, 2, 7);
      EXPECT_EQ(m->readable_logits(), size_t(2) * 7 * Vp);
      m->zero_grad();
      m->forward(tok.data(), tgt.data(), B, T);
      m->backward(1.0f);
      EXPECT_EQ(g_tally.allocs, allocs + 4);
      EXPECT_EQ(m->readable_logits(), 0u);
    }
    EXPECT_EQ(g_tally.live, 0u);
  }
}
