// The model-family tables: every ModelFamily has one row of the model table (family.h), in enum
// order, whose factory builds that family's model with its default MLP width (the parameter
// names the row gives DecoderModel being in its layout) and whose validation rejects what the
// family cannot compute; every family has one row of the Hugging Face table (hf/hf_family.h)
// found by its enum and by its model_type; a value outside the enum is an error naming
// model.family.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

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
