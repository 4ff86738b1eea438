// Hugging Face import and export refuse bad input with a message naming the file and the
// tensor or key, and leave nothing behind: a lying safetensors header, missing, unexpected or
// misshapen tensors, a tied head that differs, unknown architectures, missing or corrupt
// tokenizer files, unusable output directories, and weights of another model.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "commands/import_hf.h"
#include "core/error.h"
#include "hf/export.h"
#include "hf/hf_weights.h"
#include "hf_test_util.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "model/model_config_json.h"
#include "run/model_source.h"
#include "test_util.h"

using namespace gossamer;
using namespace gossamer::testing;
namespace fs = std::filesystem;
using nlohmann::json;

// ---- bad input -------------------------------------------------------------------------------

struct BadInput : ::testing::Test {
  TmpDir tmp;
  std::string hf;
  void SetUp() override {
    auto m = model::make_model(small_config("gpt2"), 1, 1, kernels::cpu_ops());
    m->init_weights(9);
    hf = tmp / "hf";
    hf::export_hf_model(*m, "", hf, false);
  }
  // import must fail with `pattern` in the message and leave nothing behind
  void expect_import_error(const std::string& dir, const std::string& pattern) {
    const std::string e = error_of([&] { commands::import_hf(dir, tmp / "out", false); });
    EXPECT_NE(e.find(pattern), std::string::npos) << "message: " << e;
    EXPECT_FALSE(fs::exists(tmp / "out"));
    EXPECT_TRUE(hidden_entries(tmp.path).empty());
  }
};

TEST_F(BadInput, LyingSafetensorsHeader) {
  rewrite_hf(hf, tmp / "lie", [](const std::string& n) { return n; });
  std::string bytes = read_file(tmp / "lie/model.safetensors");
  // Claim a longer first tensor than its bytes: offsets no longer tile the buffer.
  const size_t at = bytes.find("\"data_offsets\":[0,");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 18] = '9';
  write_text(tmp / "lie/model.safetensors", bytes);
  expect_import_error(tmp / "lie", "lie/model.safetensors");
  // A header length beyond the file.
  uint64_t huge = bytes.size();
  std::memcpy(bytes.data(), &huge, 8);
  write_text(tmp / "lie/model.safetensors", bytes);
  expect_import_error(tmp / "lie", "header length");
}

TEST_F(BadInput, MissingTensor) {
  rewrite_hf(hf, tmp / "miss",
             [](const std::string& n) { return n == "transformer.h.1.mlp.c_fc.bias" ? "" : n; });
  expect_import_error(tmp / "miss", "missing tensor 'transformer.h.1.mlp.c_fc.bias'");
}

TEST_F(BadInput, UnexpectedTensor) {
  const io::SafetensorsReader r(hf + "/model.safetensors");
  const io::TensorInfo& t = r.info("transformer.ln_f.bias");
  rewrite_hf(hf, tmp / "extra", [](const std::string& n) { return n; },
             {{"transformer.h.7.ln_1.bias", &t}});
  expect_import_error(tmp / "extra", "unexpected tensor 'transformer.h.7.ln_1.bias'");
}

TEST_F(BadInput, ShapeMismatchAgainstConfigJson) {
  rewrite_hf(hf, tmp / "shape", [](const std::string& n) { return n; });
  json c = json::parse(read_file(tmp / "shape/config.json"));
  c["n_positions"] = 64;  // the file's wpe has 48 rows
  write_text(tmp / "shape/config.json", c.dump());
  expect_import_error(tmp / "shape",
                      "tensor 'transformer.wpe.weight' has shape [48, 64], config.json");
}

TEST_F(BadInput, TiedHeadThatDiffers) {
  const io::SafetensorsReader r(hf + "/model.safetensors");
  const io::TensorInfo& wte = r.info("transformer.wte.weight");
  rewrite_hf(hf, tmp / "tied", [](const std::string& n) { return n; }, {{"lm_head.weight", &wte}});
  hf::load_hf_weights(tmp / "tied", hf::read_hf_model_spec(tmp / "tied"),
                      *model::make_model(small_config("gpt2"), 1, 1, kernels::cpu_ops()));
  // Change one element of the (otherwise equal) lm_head.weight.
  std::string bytes = read_file(tmp / "tied/model.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  bytes[8 + n +
        io::SafetensorsReader(tmp / "tied/model.safetensors").info("lm_head.weight").begin] ^= 1;
  write_text(tmp / "tied/model.safetensors", bytes);
  expect_import_error(tmp / "tied", "'lm_head.weight' differs from 'transformer.wte.weight'");
  const io::TensorInfo& wpe = r.info("transformer.wpe.weight");
  rewrite_hf(hf, tmp / "tied2", [](const std::string& n) { return n; }, {{"lm_head.weight", &wpe}});
  expect_import_error(tmp / "tied2", "'lm_head.weight' has shape");
}

TEST_F(BadInput, UnknownArchitectureAndMissingFiles) {
  rewrite_hf(hf, tmp / "bert", [](const std::string& n) { return n; });
  write_text(tmp / "bert/config.json", R"({"model_type": "bert"})");
  expect_import_error(tmp / "bert", "\"model_type\" is \"bert\"");
  expect_import_error(tmp / "nothing", "config.json: cannot open");
  fs::create_directories(tmp / "noweights");
  fs::copy_file(hf + "/config.json", tmp / "noweights/config.json");
  write_text(tmp / "noweights/pytorch_model.bin", "x");
  expect_import_error(tmp / "noweights", "pytorch_model.bin");
}

TEST_F(BadInput, TokenizerMissingOrCorrupt) {
  rewrite_hf(hf, tmp / "tok", [](const std::string& n) { return n; });
  write_text(tmp / "tok/tokenizer_config.json", R"({"tokenizer_class": "LlamaTokenizer"})");
  expect_import_error(tmp / "tok", "tokenizer.model: missing");
  write_text(tmp / "tok/tokenizer.model", "this is not a sentencepiece model");
  expect_import_error(tmp / "tok", "tokenizer.model");
  fs::remove(tmp / "tok/tokenizer.model");
  fs::remove(tmp / "tok/tokenizer_config.json");
  write_text(tmp / "tok/vocab.json", "{}");
  expect_import_error(tmp / "tok", "merges.txt: missing");
  write_text(tmp / "tok/merges.txt", "#version: 0.2\n");
  expect_import_error(tmp / "tok", "vocab.json: not GPT-2's encoder.json");
}

TEST_F(BadInput, OutputDirectories) {
  // A foreign non-empty directory: refused with or without --force; an earlier export only
  // with --force.
  fs::create_directories(tmp / "busy");
  write_text(tmp / "busy/notes.txt", "mine");
  auto m = model::make_model(small_config("gpt2"), 1, 1, kernels::cpu_ops());
  for (bool force : {false, true})
    EXPECT_NE(error_of([&] {
                hf::export_hf_model(*m, "", tmp / "busy", force);
              }).find("busy is not empty (notes.txt) and was not made by gossamer export-hf"),
              std::string::npos);
  EXPECT_EQ(read_file(tmp / "busy/notes.txt"), "mine");
  hf::export_hf_model(*m, "", tmp / "mine", false);
  EXPECT_NE(error_of([&] {
              hf::export_hf_model(*m, "", tmp / "mine", false);
            }).find("holds an earlier output of export-hf; use --force"),
            std::string::npos);
  hf::export_hf_model(*m, "", tmp / "mine", true);
  // Unwritable: a path below a regular file.
  EXPECT_NE(error_of([&] {
              hf::export_hf_model(*m, "", tmp / "busy/notes.txt/hf", false);
            }).find("cannot create directory"),
            std::string::npos);
  // --force replaces an earlier export.
  hf::export_hf_model(*m, "", hf, true);
  EXPECT_TRUE(fs::exists(hf + "/model.safetensors"));
  EXPECT_TRUE(hidden_entries(tmp.path).empty());
  // A bad tokenizer is found before anything is written.
  EXPECT_NE(error_of([&] {
              hf::export_hf_model(*m, "spm:" + (tmp / "nope.model"), tmp / "t", false);
            }).find("nope.model"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(tmp / "t"));
}

TEST_F(BadInput, InitFromAnotherModel) {
  model::ModelConfig other = small_config("gpt2");
  other.n_layer = 3;
  auto m = model::make_model(other, 1, 1, kernels::cpu_ops());
  EXPECT_NE(error_of([&] { run::init_weights_from(hf, *m); }).find("n_layer: 2 vs 3"),
            std::string::npos);
}
