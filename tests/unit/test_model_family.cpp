// The model-family tables: every ModelFamily has one row of the model table (family.h), in enum
// order, whose factory builds that family's model with its default MLP width (the parameter
// names the row gives DecoderModel being in its layout) and whose validation rejects what the
// family cannot compute; every family has one row of the Hugging Face table (hf/hf_family.h)
// found by its enum and by its model_type; a value outside the enum is an error naming
// model.family. The FLOPs a model counts as it runs (the compute of simulated time at
// parallel.sim.gflops) equal the analytic estimate 6N + 6LCT per training token.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "hf/hf_family.h"
#include "kernels/ops.h"
#include "model/family.h"
#include "model/model.h"
#include "test_util.h"

using namespace gossamer;
using model::ModelFamily;

TEST(ModelFamilyTable, OneRowPerFamilyInEnumOrderWithItsName) {
  const auto rows = model::model_families();
  ASSERT_EQ(rows.size(), std::size(EnumNames<ModelFamily>::values));
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(size_t(rows[i].family), i);
    EXPECT_EQ(&model::family_info(rows[i].family), &rows[i]);
    EXPECT_EQ(enum_from_name<ModelFamily>(model::family_name(rows[i].family)), rows[i].family);
  }
  EXPECT_STREQ(model::family_name(ModelFamily::MODEL_FAMILY_GPT2), "gpt2");
  EXPECT_STREQ(model::family_name(ModelFamily::MODEL_FAMILY_LLAMA), "llama");
  EXPECT_EQ(enum_choices<ModelFamily>(), "\"gpt2\" or \"llama\"");
}

TEST(ModelFamilyTable, FactoryBuildsTheFamilyWithItsDefaultMlpWidth) {
  for (const model::ModelFamilyInfo& row : model::model_families()) {
    model::ModelConfig cfg;
    cfg.family = row.family;
    cfg.n_layer = 1, cfg.n_head = 2, cfg.d_model = 48, cfg.vocab_size = 64, cfg.max_seq_len = 4;
    auto m = model::make_model(cfg, 1, 4, kernels::cpu_ops());
    EXPECT_EQ(m->config().family, row.family);
    EXPECT_EQ(cfg.d_ff_resolved(), row.default_d_ff(cfg.d_model));
    EXPECT_GT(m->num_flop_params(), 0u);
    // The row's names for DecoderModel's initialisation and FLOP count are in the layout.
    EXPECT_TRUE(m->layout().contains(std::string(row.lookup_embedding)));
    for (std::string_view suffix : {row.residual_proj_attn, row.residual_proj_mlp}) {
      EXPECT_TRUE(m->layout().contains("blocks.0." + std::string(suffix))) << suffix;
    }
  }
  EXPECT_EQ(model::family_info(ModelFamily::MODEL_FAMILY_GPT2).default_d_ff(48), 192);
  EXPECT_EQ(model::family_info(ModelFamily::MODEL_FAMILY_LLAMA).default_d_ff(48), 256);
}

// Counted op by op in the passes against the closed form of model.cpp: the two must agree for
// every family (vocabulary unpadded, since the products run over the padded rows), except that
// the estimate's N also holds the vectors (biases, norm gains), which make no product. With
// GQA (llama, 2 of 4 heads for keys and values) the key and value products are in N.
TEST(ModelFamilyTable, CountedFlopsEqualTheEstimatePerTrainingToken) {
  for (const model::ModelFamilyInfo& row : model::model_families()) {
    model::ModelConfig cfg;
    cfg.family = row.family;
    cfg.n_layer = 2, cfg.n_head = 4, cfg.d_model = 32, cfg.vocab_size = 128;
    cfg.max_seq_len = 8;
    if (row.family == ModelFamily::MODEL_FAMILY_LLAMA) cfg.n_kv_head = 2;
    const int B = 3, T = 5;
    auto m = model::make_model(cfg, B, 8, kernels::cpu_ops());
    m->init_weights(1);
    std::vector<int32_t> tokens(B * T), targets(B * T);
    for (int i = 0; i < B * T; ++i) tokens[i] = (7 * i) % 128, targets[i] = (5 * i + 3) % 128;
    EXPECT_EQ(m->flops_done(), 0.0);
    m->forward(tokens.data(), targets.data(), B, T);
    m->backward(1.0f);
    double vectors = 0;  // parameters of 1-D views: counted in 6N, no matrix product
    for (const model::ParamView& v : m->layout().views())
      if (v.shape.size() == 1) vectors += double(v.numel);
    EXPECT_GT(vectors, 0.0);
    const double step = (model::flops_per_token(*m, T) - 6 * vectors) * B * T;
    EXPECT_NEAR(m->flops_done(), step, 1e-12 * step) << model::family_name(row.family);
    m->eval_loss(tokens.data(), targets.data(), B, T);  // forward only: a third
    EXPECT_NEAR(m->flops_done(), step * 4 / 3, 1e-12 * step) << model::family_name(row.family);
  }
}

TEST(ModelFamilyTable, FamilySpecificValidationNamesTheKey) {
  model::ModelConfig gpt2;
  gpt2.n_kv_head = 2;
  gossamer::testing::expect_error([&] { gpt2.validate(); },
                                  {"model.n_kv_head", "gpt2 has no grouped-query attention"});
  gpt2 = {};
  gpt2.rope_theta = 500000;
  gossamer::testing::expect_error([&] { gpt2.validate(); }, {"model.rope_theta", "gpt2"});
  model::ModelConfig llama;
  llama.family = ModelFamily::MODEL_FAMILY_LLAMA;
  EXPECT_NO_THROW(llama.validate());
  llama.d_model = 96, llama.n_head = 32;  // head size 3: RoPE needs it even
  gossamer::testing::expect_error([&] { llama.validate(); }, {"model.n_head", "even head size"});
}

TEST(ModelFamilyTable, AValueOutsideTheEnumIsAnErrorNamingModelFamily) {
  model::ModelConfig cfg;
  cfg.family = ModelFamily(7);
  gossamer::testing::expect_error(
      [&] { cfg.validate(); }, {"model.family", "unknown model family", "\"gpt2\" or \"llama\""});
  gossamer::testing::expect_error([&] { model::make_model(cfg, 1, 1, kernels::cpu_ops()); },
                                  {"model.family"});
}

TEST(HfFamilyTable, EveryFamilyHasOneRowFoundByEnumAndModelType) {
  for (const model::ModelFamilyInfo& row : model::model_families()) {
    const hf::HfFamily& f = hf::hf_family(row.family);
    EXPECT_EQ(f.family, row.family);
    EXPECT_EQ(hf::find_hf_family(f.model_type), &f) << f.model_type;
  }
  EXPECT_EQ(hf::hf_families().size(), model::model_families().size());
  EXPECT_EQ(hf::find_hf_family("bert"), nullptr);
  EXPECT_EQ(hf::hf_model_types("and"), "\"gpt2\" and \"llama\"");
  EXPECT_EQ(hf::hf_family(ModelFamily::MODEL_FAMILY_GPT2).architecture, "GPT2LMHeadModel");
  EXPECT_EQ(hf::hf_family(ModelFamily::MODEL_FAMILY_LLAMA).architecture, "LlamaForCausalLM");
  gossamer::testing::expect_error(
      [] { hf::hf_family(ModelFamily(7)); },
      {"model.family", "no Hugging Face mapping", "supported: gpt2, llama"});
}
