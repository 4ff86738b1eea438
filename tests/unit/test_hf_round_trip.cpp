// Hugging Face import and export beyond logits parity (test_hf.cpp): bit-identical round
// trips (ours -> HF -> ours, files as transformers writes them, BF16 weights, a tied Llama head,
// sharded files), the adapter table covering every parameter with the documented layouts, and
// config.json mapped both ways with what our models cannot compute rejected by key.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands/export_hf.h"
#include "commands/import_hf.h"
#include "core/error.h"
#include "hf/adapter.h"
#include "hf/export.h"
#include "hf/hf_config.h"
#include "hf/hf_weights.h"
#include "hf_test_util.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "model/model_config_json.h"
#include "optim/optimizer.h"
#include "optim/registry.h"
#include "run/checkpoint.h"
#include "run/model_source.h"
#include "run/run_config.h"
#include "test_util.h"

using namespace gossamer;
using namespace gossamer::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A run directory with one checkpoint (step 0) of a freshly initialised model.
std::string make_run(const TmpDir& tmp, const model::ModelConfig& cfg, uint64_t seed) {
  run::RunConfig rc;
  rc.model = cfg;
  auto m = model::make_model(cfg, 1, 1, kernels::cpu_ops());
  m->init_weights(seed);
  auto opt = optim::make_optimizer(rc.optimizer, m->layout(), kernels::cpu_ops());
  const std::string run = tmp / (std::string("run-") + model::family_name(cfg.family));
  run::save_checkpoint(run, *m, *opt, run::TrainerState{}, run::to_json(rc));
  return run;
}

}  // namespace

// ---- round trips -----------------------------------------------------------------------------

TEST(HfRoundTrip, ExportThenImportIsBitIdentical) {
  for (const char* family : {"gpt2", "llama"}) {
    SCOPED_TRACE(family);
    TmpDir tmp;
    const std::string run = make_run(tmp, small_config(family), 17);
    commands::HfExportOptions opt;
    opt.no_tokenizer = true;
    commands::export_hf(run, tmp / "hf", opt);
    commands::import_hf(tmp / "hf", tmp / "ckpt", false);
    // The imported checkpoint's weights file is byte for byte the original one.
    EXPECT_EQ(read_file(run + "/checkpoints/step_00000000/model.safetensors"),
              read_file(tmp / "ckpt/model.safetensors"));
    // And exporting the imported checkpoint gives the same HF directory.
    commands::export_hf(tmp / "ckpt", tmp / "hf2", opt);
    for (const char* f : {"model.safetensors", "config.json", "generation_config.json"})
      EXPECT_EQ(read_file(tmp / "hf/" + f), read_file(tmp / "hf2/" + f)) << f;
    EXPECT_TRUE(hidden_entries(tmp.path).empty());
  }
}

// Without our metadata (a file written by transformers) the weights still come back exactly.
TEST(HfRoundTrip, ImportWithoutGossamerMetadataAndFromBaseModelFiles) {
  TmpDir tmp;
  auto m = model::make_model(small_config("gpt2"), 1, 1, kernels::cpu_ops());
  m->init_weights(3);
  hf::export_hf_model(*m, "", tmp / "hf", false);
  // As openai-community/gpt2 ships it: no "transformer." prefix, an attention-mask buffer
  // (".attn.bias", ignored), an explicit lm_head.weight equal to wte, no __metadata__.
  const io::SafetensorsReader r(tmp / "hf/model.safetensors");
  const io::TensorInfo& wte = r.info("transformer.wte.weight");
  io::TensorInfo mask = r.info("transformer.h.0.attn.c_attn.bias");  // any tensor as a stand-in
  rewrite_hf(tmp / "hf", tmp / "base",
             [](const std::string& n) { return n.substr(std::string("transformer.").size()); },
             {{"lm_head.weight", &wte}, {"h.0.attn.bias", &mask}});
  auto m2 = model::make_model(small_config("gpt2"), 1, 1, kernels::cpu_ops());
  hf::load_hf_weights(tmp / "base", hf::read_hf_model_spec(tmp / "base"), *m2);
  EXPECT_EQ(
      0, std::memcmp(m->params().data(), m2->params().data(), m->params().size() * sizeof(float)));
}

TEST(HfRoundTrip, Bf16WeightsAreConverted) {
  TmpDir tmp;
  auto m = model::make_model(small_config("llama"), 1, 1, kernels::cpu_ops());
  m->init_weights(4);
  for (float& x : m->params()) {  // make every value exactly representable in BF16
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u &= 0xffff0000u;
    std::memcpy(&x, &u, 4);
  }
  hf::export_hf_model(*m, "", tmp / "hf", false);
  rewrite_hf(
      tmp / "hf", tmp / "bf16", [](const std::string& n) { return n; }, {}, io::DType::DTYPE_BF16);
  auto m2 = model::make_model(small_config("llama"), 1, 1, kernels::cpu_ops());
  run::init_weights_from(tmp / "bf16", *m2);
  EXPECT_EQ(
      0, std::memcmp(m->params().data(), m2->params().data(), m->params().size() * sizeof(float)));
}

// A Llama saved with tie_word_embeddings (no lm_head.weight): our untied head gets a copy.
TEST(HfRoundTrip, TiedLlamaHeadIsCopiedFromTheEmbedding) {
  TmpDir tmp;
  auto m = model::make_model(small_config("llama"), 1, 1, kernels::cpu_ops());
  m->init_weights(5);
  hf::export_hf_model(*m, "", tmp / "hf", false);
  rewrite_hf(tmp / "hf", tmp / "tied",
             [](const std::string& n) { return n == "lm_head.weight" ? "" : n; });
  json c = json::parse(read_file(tmp / "tied/config.json"));
  c["tie_word_embeddings"] = true;
  write_text(tmp / "tied/config.json", c.dump());
  auto m2 = model::make_model(small_config("llama"), 1, 1, kernels::cpu_ops());
  run::init_weights_from(tmp / "tied", *m2);
  const model::ParamView &wte = m2->layout().find("wte"),
                         &head = m2->layout().find("lm_head.weight");
  ASSERT_EQ(wte.numel, head.numel);
  EXPECT_EQ(0, std::memcmp(m2->params().data() + wte.offset, m2->params().data() + head.offset,
                           wte.numel * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(m->params().data() + wte.offset, m2->params().data() + wte.offset,
                           wte.numel * sizeof(float)));
}

// Sharded files (model.safetensors.index.json + model-0000N-of-00002.safetensors).
TEST(HfRoundTrip, ShardedSafetensors) {
  TmpDir tmp;
  auto m = model::make_model(small_config("gpt2"), 1, 1, kernels::cpu_ops());
  m->init_weights(6);
  hf::export_hf_model(*m, "", tmp / "hf", false);
  fs::create_directories(tmp / "sharded");
  fs::copy_file(tmp / "hf/config.json", tmp / "sharded/config.json");
  const io::SafetensorsReader r(tmp / "hf/model.safetensors");
  io::SafetensorsWriter w[2];
  json map = json::object();
  for (size_t i = 0; i < r.tensors().size(); ++i) {
    const io::TensorInfo& t = r.tensors()[i];
    const int part = i % 2;
    w[part].add(t.name, t.dtype, t.shape, r.data(t.name));
    map[t.name] = strprintf("model-%05d-of-00002.safetensors", part + 1);
  }
  for (int part = 0; part < 2; ++part)
    w[part].write(tmp / strprintf("sharded/model-%05d-of-00002.safetensors", part + 1));
  write_text(tmp / "sharded/model.safetensors.index.json",
             json{{"metadata", json::object()}, {"weight_map", map}}.dump());
  auto m2 = model::make_model(small_config("gpt2"), 1, 1, kernels::cpu_ops());
  run::init_weights_from(tmp / "sharded", *m2);
  EXPECT_EQ(
      0, std::memcmp(m->params().data(), m2->params().data(), m->params().size() * sizeof(float)));
  // An index that names the wrong shard is an error naming the index and the tensor.
  map["transformer.wte.weight"] = "model-00002-of-00002.safetensors";
  write_text(tmp / "sharded/model.safetensors.index.json", json{{"weight_map", map}}.dump());
  EXPECT_NE(error_of([&] {
              run::init_weights_from(tmp / "sharded", *m2);
            }).find("weight_map names tensor 'transformer.wte.weight'"),
            std::string::npos);
}

// ---- tables and config.json ------------------------------------------------------------------

TEST(HfAdapter, CoversEveryParameterWithTheDocumentedLayouts) {
  for (const char* family : {"gpt2", "llama"}) {
    auto m = model::make_model(small_config(family), 1, 1, kernels::cpu_ops());
    const hf::HfAdapter a = hf::make_hf_adapter(m->config(), m->layout());
    EXPECT_EQ(a.tensors.size(), m->layout().views().size()) << family;
  }
  auto g = model::make_model(small_config("gpt2"), 1, 1, kernels::cpu_ops());
  const hf::HfAdapter a = hf::make_hf_adapter(g->config(), g->layout());
  for (const hf::HfTensorMap& t : a.tensors) {
    if (t.hf == "transformer.h.1.attn.c_attn.weight") {
      EXPECT_EQ(t.ours, "blocks.1.attn.qkv.weight");
      EXPECT_EQ(t.transform, hf::HfTransform::HF_TRANSFORM_TRANSPOSE);
      EXPECT_EQ(t.hf_shape, (io::Shape{64, 192}));  // Conv1D (in, out)
    }
    if (t.hf == "transformer.wte.weight") {
      EXPECT_EQ(t.hf_shape, (io::Shape{1000, 64}));  // vocab_size rows, not padded_vocab
    }
  }
  // Transposition is done right (a Conv1D weight W_hf satisfies W_hf[i][o] = ours[o][i]).
  const model::ParamView& v = g->layout().find("blocks.0.mlp.fc.weight");
  for (size_t i = 0; i < v.numel; ++i) g->params()[v.offset + i] = float(i);
  std::vector<float> scratch;
  const hf::HfTensorMap* fc = nullptr;
  for (const auto& t : a.tensors)
    if (t.ours == v.name) fc = &t;
  const float* hf = hf::hf_tensor_from_ours(*fc, v, g->params().data(), scratch);
  const int64_t F = v.shape[0], C = v.shape[1];
  EXPECT_EQ(hf[3 * F + 5], float(5 * C + 3));
}

TEST(HfConfig, RoundTripsThroughConfigJson) {
  for (const char* family : {"gpt2", "llama"}) {
    const model::ModelConfig cfg =
        family == std::string("llama") ? llama_parity_config() : small_config(family);
    const json j = json::parse(hf::hf_config_json(cfg, {}).dump());
    const hf::HfModelSpec s = hf::hf_model_spec_from_json(j, "config.json");
    EXPECT_EQ(model::model_config_difference(s.config, cfg), "") << family;
    EXPECT_EQ(s.config.init_std, cfg.init_std);
  }
  // transformers' defaults for absent keys: LlamaConfig's rms_norm_eps is 1e-6.
  const auto s = hf::hf_model_spec_from_json(
      json::parse(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                     "num_hidden_layers": 1, "intermediate_size": 96, "vocab_size": 10})"),
      "c.json");
  EXPECT_EQ(s.config.norm_eps, 1e-6);
  EXPECT_EQ(s.config.n_kv_head_resolved(), 4);
  EXPECT_FALSE(s.tied_head);
}

TEST(HfConfig, RejectsWhatOurModelsCannotComputeNamingTheKey) {
  auto err = [](const std::string& text) {
    return error_of([&] { hf::hf_model_spec_from_json(json::parse(text), "x/config.json"); });
  };
  EXPECT_NE(err(R"({"model_type": "bert"})").find("x/config.json: \"model_type\" is \"bert\""),
            std::string::npos);
  EXPECT_NE(err(R"({"n_layer": 2})").find("no \"model_type\""), std::string::npos);
  EXPECT_NE(err(R"({"model_type": "gpt2", "architectures": ["GPT2ForSequenceClassification"]})")
                .find("\"architectures\""),
            std::string::npos);
  EXPECT_NE(err(R"({"model_type": "gpt2", "activation_function": "relu"})")
                .find("\"activation_function\""),
            std::string::npos);
  EXPECT_NE(
      err(R"({"model_type": "gpt2", "layer_norm_epsilon": 1e-6})").find("\"layer_norm_epsilon\""),
      std::string::npos);
  EXPECT_NE(err(R"({"model_type": "gpt2", "n_embd": "768"})").find("\"n_embd\" must be an integer"),
            std::string::npos);
  EXPECT_NE(err(R"({"model_type": "llama", "rope_scaling": {"type": "linear", "factor": 2}})")
                .find("\"rope_scaling\""),
            std::string::npos);
  EXPECT_NE(err(R"({"model_type": "llama", "hidden_act": "gelu"})").find("\"hidden_act\""),
            std::string::npos);
  EXPECT_NE(
      err(R"({"model_type": "llama", "num_key_value_heads": 5})").find("\"num_key_value_heads\""),
      std::string::npos);
}
