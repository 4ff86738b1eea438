// GPT-2-specific checks: the parameter layout in backward order, the initialisation (padded
// vocabulary rows zero, the configured statistics) and the LM head tied to the token
// embedding. The checks every family shares (the golden PyTorch reference, hook ranges,
// determinism, accumulation, rejected inputs) are in test_model_golden.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "model/gpt2.h"

using namespace gossamer;

TEST(Gpt2Layout, BackwardOrderHeadBlocksFromTheLastThenEmbeddings) {
  model::ModelConfig cfg;
  cfg.n_layer = 3, cfg.n_head = 2, cfg.d_model = 8, cfg.vocab_size = 50, cfg.max_seq_len = 8;
  model::Gpt2 m(cfg, 2, 5, kernels::cpu_ops());
  const auto& views = m.layout().views();
  EXPECT_EQ(views.front().name, "ln_f.weight");
  EXPECT_EQ(views.back().name, "wte");
  EXPECT_EQ(views[views.size() - 2].name, "wpe");
  EXPECT_LT(m.layout().find("blocks.2.mlp.proj.weight").offset,
            m.layout().find("blocks.0.ln1.bias").offset);
  EXPECT_FALSE(m.layout().contains("lm_head.weight")) << "the head is tied to wte";
}

TEST(Gpt2Init, PaddedRowsAreZeroAndStatisticsMatchTheConfig) {
  model::ModelConfig cfg;
  cfg.n_layer = 2, cfg.n_head = 2, cfg.d_model = 64, cfg.vocab_size = 1000, cfg.max_seq_len = 32;
  model::Gpt2 m(cfg, 1, 8, kernels::cpu_ops());
  m.init_weights(3);
  const auto& wte = m.layout().find("wte");
  const float* p = m.params().data() + wte.offset;
  for (size_t i = size_t(cfg.vocab_size) * cfg.d_model; i < wte.numel; ++i) ASSERT_EQ(p[i], 0.0f);
  double s2 = 0;
  const size_t n = size_t(cfg.vocab_size) * cfg.d_model;
  for (size_t i = 0; i < n; ++i) s2 += double(p[i]) * p[i];
  EXPECT_NEAR(std::sqrt(s2 / n), cfg.init_std, 0.002);
  const auto& proj = m.layout().find("blocks.0.attn.proj.weight");
  s2 = 0;
  for (size_t i = 0; i < proj.numel; ++i)
    s2 += double(m.params()[proj.offset + i]) * m.params()[proj.offset + i];
  EXPECT_NEAR(std::sqrt(s2 / proj.numel), cfg.init_std / std::sqrt(4.0), 0.002);
  EXPECT_EQ(m.params()[m.layout().find("blocks.1.ln2.weight").offset], 1.0f);
}

TEST(Gpt2TiedHead, LogitsOfATokenAreItsEmbeddingRowTimesTheFinalActivations) {
  // logits[:, j] = ln_f(x) . wte[j]: zeroing the embedding row of a token the input does not
  // use zeroes exactly that logit column and leaves the others unchanged.
  model::ModelConfig cfg;
  cfg.n_layer = 1, cfg.n_head = 2, cfg.d_model = 16, cfg.vocab_size = 40, cfg.max_seq_len = 8;
  model::Gpt2 m(cfg, 1, 6, kernels::cpu_ops());
  m.init_weights(9);
  const int Vp = cfg.padded_vocab_resolved(), j = 33;
  std::vector<int32_t> tok = {1, 5, 9, 2, 7, 3};
  m.forward(tok.data(), nullptr, 1, 6);
  const std::vector<float> before(m.logits(), m.logits() + 6 * Vp);
  const auto& wte = m.layout().find("wte");
  for (int c = 0; c < cfg.d_model; ++c) m.params()[wte.offset + size_t(j) * cfg.d_model + c] = 0;
  m.forward(tok.data(), nullptr, 1, 6);
  for (int t = 0; t < 6; ++t) {
    EXPECT_NE(before[t * Vp + j], 0.0f);
    EXPECT_EQ(m.logits()[t * Vp + j], 0.0f) << "position " << t;
    for (int k = 0; k < cfg.vocab_size; ++k) {
      if (k == j) continue;
      ASSERT_EQ(m.logits()[t * Vp + k], before[t * Vp + k]) << t << " " << k;
    }
  }
}
