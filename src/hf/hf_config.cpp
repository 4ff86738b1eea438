// The family-independent part of the config.json mapping (see hf_config.h): model_type and
// architecture checks, the common keys, and the dispatch to the family's row of hf_family.h
// (hf_gpt2.cpp, hf_llama.cpp), which holds its keys, HF's defaults for absent ones, and every
// rejected setting, naming the key.
#include "hf/hf_config.h"

#include "core/error.h"
#include "hf/hf_config_keys.h"
#include "hf/hf_family.h"

namespace gossamer::hf {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

void add_special_tokens(ordered_json& j, const HfSpecialTokens& t) {
  if (t.bos) j["bos_token_id"] = *t.bos;
  if (t.eos) j["eos_token_id"] = *t.eos;
}

void check_architecture(const json& j, const std::string& file, const char* want) {
  auto it = j.find("architectures");
  if (it == j.end() || it->is_null()) return;  // optional in HF
  GOSSAMER_CHECK(it->is_array(), "%s: \"architectures\" must be a list, found %s", file.c_str(),
                 it->dump().c_str());
  for (const json& a : *it)
    if (a.is_string() && a.get<std::string>() == want) return;
  fail("%s: \"architectures\" is %s; gossamer imports %s only", file.c_str(), it->dump().c_str(),
       want);
}

}  // namespace

ordered_json hf_config_json(const model::ModelConfig& c, const HfSpecialTokens& tokens) {
  const HfFamily& family = hf_family(c.family);
  ordered_json j;
  j["architectures"] = ordered_json::array({family.architecture});
  j["model_type"] = family.model_type;
  family.write_config(c, j);
  add_special_tokens(j, tokens);
  j["use_cache"] = true;
  j["torch_dtype"] = "float32";
  return j;
}

ordered_json hf_generation_config_json(const HfSpecialTokens& tokens) {
  ordered_json j;
  j["_from_model_config"] = true;
  add_special_tokens(j, tokens);
  return j;
}

HfModelSpec hf_model_spec_from_json(const json& j, const std::string& file) {
  GOSSAMER_CHECK(j.is_object(), "%s: expected a JSON object", file.c_str());
  HfConfigKeys k(j, file);
  GOSSAMER_CHECK(k.find("model_type"), "%s: no \"model_type\" (expected %s)", file.c_str(),
                 hf_model_types("or").c_str());
  const std::string type = k.string("model_type", "");
  const HfFamily* family = find_hf_family(type);
  if (!family)
    fail("%s: \"model_type\" is \"%s\"; gossamer imports %s only", file.c_str(), type.c_str(),
         hf_model_types("and").c_str());
  check_architecture(j, file, family->architecture.c_str());
  HfModelSpec s;
  s.config.family = family->family;
  family->read_config(k, s);
  try {
    s.config.validate("");
  } catch (const Error& e) {
    fail("%s: not a model gossamer can build: %s", file.c_str(), e.what());
  }
  return s;
}

}  // namespace gossamer::hf
