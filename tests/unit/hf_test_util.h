// Helpers shared by the Hugging Face tests (test_hf*.cpp): a temporary directory, whole-file
// reads and writes, hidden leftovers of an atomic write, the small models they export and
// import, and a copy of an HF directory with its tensors renamed, dropped, added or in BF16.
// Invariant: helpers only build inputs and read outputs; the checks stay in the tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "io/safetensors.h"
#include "model/model_config.h"

namespace gossamer::testing {

// A fresh directory under the system temporary directory, removed with everything in it.
struct TmpDir {
  std::filesystem::path path;
  TmpDir() {
    std::string t = (std::filesystem::temp_directory_path() / "gossamer-test-hf.XXXXXX").string();
    EXPECT_NE(::mkdtemp(t.data()), nullptr);
    path = t;
  }
  ~TmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// The whole file (a failed expectation when it cannot be opened).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Entries of dir whose name starts with "." (what an interrupted atomic write leaves).
inline std::vector<std::string> hidden_entries(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with(".")) out.push_back(e.path().filename());
  return out;
}

// A 2-layer model of the family ("gpt2" or "llama") small enough to export in milliseconds.
inline model::ModelConfig small_config(const std::string& family) {
  model::ModelConfig cfg;
  cfg.family = *enum_from_name<model::ModelFamily>(family);
  cfg.n_layer = 2;
  cfg.n_head = 4;
  cfg.d_model = 64;
  cfg.vocab_size = 1000;
  cfg.max_seq_len = 48;
  if (family == "llama") cfg.n_kv_head = 1;  // multi-query; d_ff left at the default
  return cfg;
}

// The Llama of the parity test; its config.json mapping is also round-tripped.
inline model::ModelConfig llama_parity_config() {
  model::ModelConfig cfg;
  cfg.family = model::ModelFamily::MODEL_FAMILY_LLAMA;
  cfg.n_layer = 2;
  cfg.n_head = 4;
  cfg.n_kv_head = 2;  // grouped-query attention
  cfg.d_model = 64;
  cfg.d_ff = 96;
  cfg.vocab_size = 300;  // padded to 384
  cfg.max_seq_len = 32;
  cfg.rope_theta = 5000;  // not HF's default, so the mapping must carry it
  cfg.norm_eps = 1e-5;    // likewise (HF's default is 1e-6)
  return cfg;
}

// Copies an HF directory, rewriting model.safetensors through `edit` (name -> new name, or ""
// to drop) and adding `extra` tensors (F32).
inline void rewrite_hf(const std::string& src, const std::string& dst,
                       const std::function<std::string(const std::string&)>& edit,
                       const std::vector<std::pair<std::string, const io::TensorInfo*>>& extra = {},
                       std::optional<io::DType> as = std::nullopt) {
  std::filesystem::create_directories(dst);
  for (const auto& e : std::filesystem::directory_iterator(src))
    if (e.path().filename() != "model.safetensors")
      std::filesystem::copy_file(e.path(), std::filesystem::path(dst) / e.path().filename(),
                                 std::filesystem::copy_options::overwrite_existing);
  const io::SafetensorsReader r(src + "/model.safetensors");
  io::SafetensorsWriter w;
  std::vector<std::vector<uint16_t>> bf16;
  for (const io::TensorInfo& t : r.tensors()) {
    const std::string name = edit(t.name);
    if (name.empty()) continue;
    if (as == io::DType::DTYPE_BF16) {  // truncation: exact for values already representable
      const auto* f = static_cast<const uint32_t*>(r.data(t.name));
      bf16.emplace_back(size_t(t.numel()));
      for (size_t i = 0; i < bf16.back().size(); ++i) bf16.back()[i] = uint16_t(f[i] >> 16);
      w.add(name, io::DType::DTYPE_BF16, t.shape, bf16.back().data());
    } else {
      w.add(name, t.dtype, t.shape, r.data(t.name));
    }
  }
  for (const auto& [name, info] : extra) w.add(name, info->dtype, info->shape, r.data(info->name));
  w.write(dst + "/model.safetensors");
}

}  // namespace gossamer::testing
