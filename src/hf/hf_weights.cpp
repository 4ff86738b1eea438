// Implementation of hf_weights.h: the directory's safetensors files are opened once (each
// reader validates its whole header), then the adapter table is walked.
#include "hf/hf_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "hf/adapter.h"
#include "hf/export.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "model/host_params.h"
#include "model/model_config_json.h"

namespace gossamer::hf {

namespace fs = std::filesystem;
using nlohmann::json;

std::string describe_hf_model(const HfModelSpec& s) {
  const model::ModelConfig& c = s.config;
  return strprintf("%s: %d layers, d_model %d, %d heads, vocab %d", model::family_name(c.family),
                   c.n_layer, c.d_model, c.n_head, c.vocab_size);
}

namespace {

json read_json_object(const fs::path& path, const char* hint) {
  std::error_code ec;
  GOSSAMER_CHECK(fs::exists(path, ec), "%s: cannot open: no such file%s", path.c_str(), hint);
  return io::read_json_object(path.string(), "JSON file");
}

// The safetensors files of an HF directory, tensor name -> reader.
class HfWeights {
 public:
  explicit HfWeights(const fs::path& dir) {
    const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
    std::error_code ec;
    if (fs::exists(single, ec)) {
      add(single);
      return;
    }
    if (fs::exists(index, ec)) {
      json j = read_json_object(index, "");
      auto it = j.find("weight_map");
      GOSSAMER_CHECK(it != j.end() && it->is_object(), "%s: no \"weight_map\" object",
                     index.c_str());
      std::set<std::string> files;
      for (const auto& [name, file] : it->items()) {
        GOSSAMER_CHECK(file.is_string(), "%s: weight_map[\"%s\"] must be a file name",
                       index.c_str(), name.c_str());
        files.insert(file.get<std::string>());
      }
      for (const std::string& f : files) add(dir / f);
      for (const auto& [name, file] : it->items()) {
        auto r = where_.find(name);
        GOSSAMER_CHECK(
            r != where_.end() && r->second->path() == (dir / file.get<std::string>()).string(),
            "%s: weight_map names tensor '%s' in %s, which does not hold it", index.c_str(),
            name.c_str(), file.get<std::string>().c_str());
      }
      return;
    }
    const bool pt = fs::exists(dir / "pytorch_model.bin", ec);
    fail("%s: no model.safetensors (nor model.safetensors.index.json)%s", dir.c_str(),
         pt ? "; it holds pytorch_model.bin, which gossamer does not read: save the model with "
              "safe_serialization=True"
            : "");
  }

  const io::SafetensorsReader* find(const std::string& name) const {
    auto it = where_.find(name);
    return it == where_.end() ? nullptr : it->second;
  }
  // Every tensor of every file, with its reader.
  const std::map<std::string, const io::SafetensorsReader*>& all() const { return where_; }
  std::string files() const {
    std::string s;
    for (const auto& r : readers_) s += (s.empty() ? "" : ", ") + r->path();
    return s;
  }
  // F32 data of tensor `name`, converted from any float dtype; `buf` holds it when a copy is
  // needed (another dtype, or data not aligned for float).
  const float* floats(const std::string& name, std::vector<float>& buf) const {
    const io::SafetensorsReader& r = *find(name);
    const void* p = r.data(name);
    if (r.info(name).dtype == io::DType::DTYPE_F32 &&
        reinterpret_cast<uintptr_t>(p) % alignof(float) == 0)
      return static_cast<const float*>(p);
    buf = r.read_as<float>(name);  // F16/BF16/F64 -> float; integers are rejected below
    return buf.data();
  }

 private:
  void add(const fs::path& file) {
    readers_.push_back(std::make_unique<io::SafetensorsReader>(file.string()));
    const io::SafetensorsReader* r = readers_.back().get();
    for (const io::TensorInfo& t : r->tensors()) {
      auto [it, fresh] = where_.emplace(t.name, r);
      GOSSAMER_CHECK(fresh, "%s: tensor '%s' is also in %s", file.c_str(), t.name.c_str(),
                     it->second->path().c_str());
    }
  }

  std::vector<std::unique_ptr<io::SafetensorsReader>> readers_;
  std::map<std::string, const io::SafetensorsReader*> where_;
};

bool is_float(io::DType d) {
  return d == io::DType::DTYPE_F32 || d == io::DType::DTYPE_F16 || d == io::DType::DTYPE_BF16 ||
         d == io::DType::DTYPE_F64;
}

// The checked tensor `name`: present, float, shaped as config.json implies.
const float* checked_tensor(const HfWeights& w, const std::string& name, const io::Shape& want,
                            const HfModelSpec& spec, std::vector<float>& buf) {
  const io::SafetensorsReader* r = w.find(name);
  GOSSAMER_CHECK(r != nullptr, "%s: missing tensor '%s' (config.json describes %s)",
                 w.files().c_str(), name.c_str(), describe_hf_model(spec).c_str());
  const io::TensorInfo& t = r->info(name);
  GOSSAMER_CHECK(t.shape == want, "%s: tensor '%s' has shape %s, config.json (%s) implies %s",
                 r->path().c_str(), name.c_str(), io::shape_to_string(t.shape).c_str(),
                 describe_hf_model(spec).c_str(), io::shape_to_string(want).c_str());
  GOSSAMER_CHECK(is_float(t.dtype), "%s: tensor '%s' has dtype %s, expected a float type",
                 r->path().c_str(), name.c_str(), dtype_name(t.dtype));
  return w.floats(name, buf);
}

}  // namespace

bool is_hf_model_dir(const std::string& path) {
  const fs::path dir(path);
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || fs::exists(dir / "trainer.json", ec)) return false;
  try {
    return io::read_json_object((dir / "config.json").string(), "HF config").contains("model_type");
  } catch (const Error&) {
    return false;  // no config.json of a model: not an HF model directory
  }
}

HfModelSpec read_hf_model_spec(const std::string& hf_dir) {
  const fs::path dir(hf_dir);
  const fs::path file = dir / "config.json";
  HfModelSpec spec = hf_model_spec_from_json(
      read_json_object(file, " (not a Hugging Face model directory?)"), file.string());
  // Our own export records our model config; adopt it when it is the same model.
  std::error_code ec;
  const fs::path st = dir / "model.safetensors";
  if (!fs::exists(st, ec)) return spec;
  io::SafetensorsReader reader(st.string());
  auto it = reader.metadata().find(kHfGossamerConfigKey);
  if (it == reader.metadata().end()) return spec;
  try {
    const model::ModelConfig ours =
        model::model_config_from_json(json::parse(it->second), st.string() + ": model");
    ours.validate();
    const std::string diff = model::model_config_difference(ours, spec.config);
    if (diff.empty() && ours.init_std == spec.config.init_std &&
        ours.padded_vocab_resolved() >= ours.vocab_size) {
      spec.config = ours;
    } else {
      log_warn("%s: metadata %s describes another model than config.json (%s); using config.json",
               st.c_str(), kHfGossamerConfigKey, diff.empty() ? "init_std" : diff.c_str());
    }
  } catch (const std::exception& e) {
    log_warn("%s: ignoring unreadable metadata %s: %s", st.c_str(), kHfGossamerConfigKey, e.what());
  }
  return spec;
}

void load_hf_weights(const std::string& hf_dir, const HfModelSpec& spec, model::Model& model) {
  const std::string diff = model::model_config_difference(spec.config, model.config());
  GOSSAMER_CHECK(diff.empty(), "%s/config.json: describes another model than the one built (%s)",
                 hf_dir.c_str(), diff.c_str());
  const fs::path dir(hf_dir);
  const HfWeights weights(dir);
  HfAdapter adapter = make_hf_adapter(model.config(), model.layout());
  const HfFamily& family = *adapter.family;

  // Files saved from the base model (GPT2Model) lack the "transformer." prefix.
  std::string strip;
  if (!family.base_prefix.empty() && !adapter.tensors.empty() &&
      !weights.find(adapter.tensors[0].hf) &&
      weights.find(adapter.tensors[0].hf.substr(family.base_prefix.size())))
    strip = family.base_prefix;
  auto file_name = [&](const std::string& hf) {
    return !strip.empty() && hf.starts_with(strip) ? hf.substr(strip.size()) : hf;
  };

  std::set<std::string> used;
  model::HostParamsEdit host(model, /*read_first=*/true);
  float* params = host.span().data();
  std::vector<float> buf;
  std::map<std::string, std::string> source;  // HF name -> file name actually read
  // A head config.json ties to the embedding (a tied Llama head) is read from the embedding.
  const HfTiedAlias& head = family.optional_tied_head;
  const bool tie_head = spec.tied_head && !head.hf.empty();
  for (const HfTensorMap& t : adapter.tensors) {
    const std::string name = file_name(tie_head && t.hf == head.hf ? head.same_as : t.hf);
    const float* data = checked_tensor(weights, name, t.hf_shape, spec, buf);
    hf_tensor_to_ours(t, model.layout().find(t.ours), data, params);
    used.insert(name);
    source[t.hf] = name;
  }
  // Tied aliases: optional, but when present they must be the tensor they alias.
  std::vector<HfTiedAlias> tied = adapter.tied;
  if (tie_head) tied.push_back(head);
  for (const HfTiedAlias& a : tied) {
    const std::string name = file_name(a.hf),
                      orig = source.count(a.same_as) ? source[a.same_as] : file_name(a.same_as);
    const io::SafetensorsReader* r = weights.find(name);
    if (!r) continue;
    std::vector<float> b1, b2;
    const io::Shape want = weights.find(orig)->info(orig).shape;
    const float* x = checked_tensor(weights, name, want, spec, b1);
    const float* y = weights.floats(orig, b2);
    GOSSAMER_CHECK(std::memcmp(x, y, size_t(io::shape_numel(want)) * sizeof(float)) == 0,
                   "%s: tensor '%s' differs from '%s', but config.json ties them "
                   "(tie_word_embeddings)",
                   r->path().c_str(), name.c_str(), orig.c_str());
    used.insert(name);
  }
  std::vector<std::string> ignored;
  for (const auto& [name, reader] : weights.all()) {
    if (used.count(name)) continue;
    if (adapter.is_ignored_buffer(name)) {
      ignored.push_back(name);
      continue;
    }
    fail("%s: unexpected tensor '%s' (not part of a %s with config.json's settings: %s)",
         reader->path().c_str(), name.c_str(), family.architecture.c_str(),
         describe_hf_model(spec).c_str());
  }
  host.commit();
  if (!ignored.empty()) {
    std::string names;
    for (size_t i = 0; i < ignored.size() && i < 3; ++i) names += (i ? ", " : "") + ignored[i];
    log_info(
        "%s: ignoring %zu buffer(s) that are not parameters (causal masks, rotary tables): "
        "%s%s",
        hf_dir.c_str(), ignored.size(), names.c_str(), ignored.size() > 3 ? ", ..." : "");
  }
}

}  // namespace gossamer::hf
