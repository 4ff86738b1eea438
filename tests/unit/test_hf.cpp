// Hugging Face export: logits parity of exported directories against an independent float64
// implementation of GPT2LMHeadModel / LlamaForCausalLM (scripts/hf_reference.py), both through
// committed reference logits (tests/assets/hf_parity_*.safetensors, made by
// scripts/make_hf_parity.sh from the very export this test makes: the asset records the sha256
// of config.json and of the tensors, and the test checks its fresh export against them, so CI
// proves the chain without torch) and live when /usr/bin/python3 has torch (else SKIPPED).
// Round trips, the adapter tables and config.json are test_hf_round_trip.cpp; bad input is
// test_hf_bad_input.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/sha256.h"
#include "hf/adapter.h"
#include "hf/export.h"
#include "hf_test_util.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/model.h"

using namespace gossamer;
using namespace gossamer::testing;
namespace fs = std::filesystem;

namespace {

constexpr double kParityTol = 1e-4;  // max |ours - ref| / max |ref| (the bound)

std::string assets_dir() {
  const char* dir = std::getenv("GOSSAMER_TEST_ASSETS");
  return dir ? dir : GOSSAMER_SOURCE_DIR "/tests/assets";
}

// sha256 over each tensor's "name\0dtype\0[shape]\0" in data order, then the data section:
// binds names, dtypes, shapes and bytes but not the header's formatting or __metadata__
// (scripts/hf_reference.py computes the same).
std::string tensors_sha256(const std::string& path) {
  const io::SafetensorsReader r(path);
  Sha256 h;
  for (const io::TensorInfo& t : r.tensors()) {
    const std::string s =
        t.name + '\0' + dtype_name(t.dtype) + '\0' + io::shape_to_string(t.shape) + '\0';
    h.update(s.data(), s.size());
  }
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  h.update(bytes.data() + 8 + n, bytes.size() - 8 - n);
  std::string hex;
  for (uint8_t b : h.digest()) hex += strprintf("%02x", b);
  return hex;
}

// max |ours - ref| / max |ref| over the real vocabulary; ours is (B,T,Vp), ref (B,T,V).
double rel_max_err(const float* ours, int Vp, const std::vector<double>& ref, int V) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double a = ours[(i / V) * Vp + i % V];
    if (std::isnan(a)) return INFINITY;
    num = std::max(num, std::abs(a - ref[i]));
    den = std::max(den, std::abs(ref[i]));
  }
  return num / den;
}

void write_tokens(const std::string& path, const std::vector<int32_t>& tokens, int B, int T) {
  io::SafetensorsWriter w;
  w.add("tokens", io::DType::DTYPE_I32, {B, T}, tokens.data());
  w.write(path);
}

// ---- the parity models -------------------------------------------------------------------

struct ParityCase {
  std::unique_ptr<model::Model> model;
  std::vector<int32_t> tokens;
  int B = 0, T = 0;
};

// GPT-2: the golden model of tests/assets/gpt2_golden.safetensors (make_golden.py --family gpt2).
ParityCase gpt2_parity_case() {
  const io::SafetensorsReader g(assets_dir() + "/gpt2_golden.safetensors");
  auto meta = [&](const char* k) { return std::stoi(g.metadata(k)); };
  model::ModelConfig cfg;
  cfg.family = model::ModelFamily::MODEL_FAMILY_GPT2;
  cfg.n_layer = meta("n_layer");
  cfg.n_head = meta("n_head");
  cfg.d_model = meta("d_model");
  cfg.vocab_size = meta("vocab_size");
  cfg.padded_vocab = meta("padded_vocab");
  cfg.max_seq_len = meta("max_seq_len");
  ParityCase c;
  c.B = meta("B");
  c.T = meta("T");
  c.model = model::make_model(cfg, c.B, c.T, kernels::cpu_ops());
  for (const model::ParamView& v : c.model->layout().views()) {
    const auto x = g.read_as<float>("param." + v.name, v.shape);
    std::copy(x.begin(), x.end(), c.model->params().data() + v.offset);
  }
  c.tokens = g.read_as<int32_t>("tokens", {c.B, c.T});
  return c;
}

// Fills the model in HF tensor order with exactly reproducible values (integer RNG, no libm):
// norm gains 1 + 0.2 u, everything else 0.12 u, u uniform in [-1, 1).
void fill_in_hf_order(model::Model& m, uint64_t seed) {
  const hf::HfAdapter a = hf::make_hf_adapter(m.config(), m.layout());
  Rng rng(seed, /*stream=*/0x6866);
  for (const hf::HfTensorMap& t : a.tensors) {
    std::vector<float> x(size_t(io::shape_numel(t.hf_shape)));
    const bool norm =
        t.hf.find("norm") != std::string::npos || t.hf.find("ln_") != std::string::npos;
    for (float& v : x) {
      const double u = 2 * rng.uniform() - 1;
      v = float(norm ? 1 + 0.2 * u : 0.12 * u);
    }
    hf::hf_tensor_to_ours(t, m.layout().find(t.ours), x.data(), m.params().data());
  }
}

std::vector<int32_t> random_tokens(int n, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = int32_t(rng.below(uint64_t(V)));
  return t;
}

ParityCase llama_parity_case() {
  ParityCase c;
  c.B = 2;
  c.T = 16;
  c.model = model::make_model(llama_parity_config(), c.B, c.T, kernels::cpu_ops());
  fill_in_hf_order(*c.model, 2024);
  c.tokens = random_tokens(c.B * c.T, c.model->config().vocab_size, 99);
  return c;
}

// Our logits for the case's tokens against reference logits (B,T,V).
double parity_error(ParityCase& c, const std::vector<double>& ref) {
  c.model->forward(c.tokens.data(), nullptr, c.B, c.T);
  return rel_max_err(c.model->logits(), c.model->config().padded_vocab_resolved(), ref,
                     c.model->config().vocab_size);
}

void check_against_asset(const char* arch, ParityCase c) {
  TmpDir tmp;
  const std::string dump = std::getenv("GOSSAMER_HF_PARITY_EXPORT_DIR")
                               ? std::getenv("GOSSAMER_HF_PARITY_EXPORT_DIR")
                               : "";
  const std::string dir = dump.empty() ? tmp / "hf" : dump + "/" + arch;
  hf::export_hf_model(*c.model, "", dir, /*force=*/true);
  if (!dump.empty()) {  // scripts/make_hf_parity.sh: leave the export for the reference
    write_tokens(dump + "/" + arch + ".tokens.safetensors", c.tokens, c.B, c.T);
    GTEST_SKIP() << "dump mode: wrote " << dir;
  }
  const std::string asset = assets_dir() + "/hf_parity_" + arch + ".safetensors";
  ASSERT_TRUE(fs::exists(asset)) << asset << " missing: run scripts/make_hf_parity.sh";
  const io::SafetensorsReader ref(asset);
  const char* regen =
      " (the export changed: if intended, regenerate with scripts/make_hf_parity.sh)";
  ASSERT_EQ(sha256_file_hex(dir + "/config.json"), ref.metadata("config_sha256"))
      << "config.json differs from the one the reference logits were computed from" << regen;
  ASSERT_EQ(tensors_sha256(dir + "/model.safetensors"), ref.metadata("tensors_sha256"))
      << "model.safetensors' tensors differ from the ones the reference used" << regen;
  ASSERT_EQ(ref.read_as<int32_t>("tokens", {c.B, c.T}), c.tokens);
  const int V = c.model->config().vocab_size;
  const double err = parity_error(c, ref.read_as<double>("logits", {c.B, c.T, V}));
  std::printf("%s: max |ours - HF reference| / max |reference| = %.3e (bound %.0e)\n", arch, err,
              kParityTol);
  EXPECT_LE(err, kParityTol);
}

bool python_has_torch() {
  return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

// Exports the case, runs scripts/hf_reference.py on the export, compares.
double live_reference_error(ParityCase c) {
  TmpDir tmp;
  hf::export_hf_model(*c.model, "", tmp / "hf", false);
  write_tokens(tmp / "tokens.safetensors", c.tokens, c.B, c.T);
  const std::string cmd = "/usr/bin/python3 " GOSSAMER_SOURCE_DIR "/scripts/hf_reference.py '" +
                          (tmp / "hf") + "' --tokens-file '" + (tmp / "tokens.safetensors") +
                          "' --out '" + (tmp / "ref.safetensors") + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const io::SafetensorsReader ref(tmp / "ref.safetensors");
  EXPECT_EQ(ref.metadata("tensors_sha256"), tensors_sha256(tmp / "hf/model.safetensors"));
  return parity_error(c, ref.read_as<double>("logits", {c.B, c.T, c.model->config().vocab_size}));
}

}  // namespace

// ---- parity --------------------------------------------------------------------------------

TEST(HfParity, Gpt2ExportMatchesCommittedReference) {
  check_against_asset("gpt2", gpt2_parity_case());
}

TEST(HfParity, LlamaExportMatchesCommittedReference) {
  check_against_asset("llama", llama_parity_case());
}

// The HF reference (GPT2LMHeadModel semantics on the exported, transposed weights) and the
// golden reference (our layout) are independent implementations: they must agree too.
TEST(HfParity, Gpt2ReferenceAgreesWithGoldenReference) {
  const std::string asset = assets_dir() + "/hf_parity_gpt2.safetensors";
  if (!fs::exists(asset)) GTEST_SKIP() << "SKIPPED: " << asset << " missing";
  const io::SafetensorsReader hf(asset), golden(assets_dir() + "/gpt2_golden.safetensors");
  const auto a = hf.read_as<double>("logits"), b = golden.read_as<double>("logits");
  ASSERT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(a[i] - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  // The export holds the golden float64 parameters rounded to float32: ~1e-7 relative.
  EXPECT_LE(num / den, 1e-5);
}

TEST(HfParity, LiveReferenceOnFreshExports) {
  if (!python_has_torch()) GTEST_SKIP() << "SKIPPED: /usr/bin/python3 cannot import torch";
  for (const char* family : {"gpt2", "llama"}) {
    ParityCase c;
    c.B = 2;
    c.T = 24;
    c.model = model::make_model(small_config(family), c.B, c.T, kernels::cpu_ops());
    c.model->init_weights(31);
    c.tokens = random_tokens(c.B * c.T, c.model->config().vocab_size, 5);
    const double err = live_reference_error(std::move(c));
    std::printf("%s (live): max |ours - HF reference| / max |reference| = %.3e\n", family, err);
    EXPECT_LE(err, kParityTol) << family;
  }
}
