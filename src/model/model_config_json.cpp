// model_config_json.h: the model section through the generic config visitors.
#include "model/model_config_json.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "core/config_visitors.h"
#include "core/enum_names.h"

namespace gossamer::model {

nlohmann::json model_config_to_json(const ModelConfig& config) {
  ModelConfig copy = config;  // visit() takes its fields by non-const reference
  return config_detail::section_to_json(copy);
}

ModelConfig model_config_from_json(const nlohmann::json& j, const std::string& where) {
  return config_detail::section_from_json<ModelConfig>(j, where);
}

std::string model_config_difference(const ModelConfig& a, const ModelConfig& b) {
  auto d = [](const char* key, auto x, auto y) {
    std::ostringstream s;
    if (x == y) return std::string();
    s << key << ": " << x << " vs " << y;
    return s.str();
  };
  for (const std::string& s :
       {d("family", enum_name(a.family), enum_name(b.family)), d("n_layer", a.n_layer, b.n_layer),
        d("n_head", a.n_head, b.n_head), d("d_model", a.d_model, b.d_model),
        d("vocab_size", a.vocab_size, b.vocab_size), d("max_seq_len", a.max_seq_len, b.max_seq_len),
        d("n_kv_head", a.n_kv_head_resolved(), b.n_kv_head_resolved()),
        d("d_ff", a.d_ff_resolved(), b.d_ff_resolved()),
        // Every family: gpt2 requires the defaults, so they differ only for llama.
        d("rope_theta", a.rope_theta, b.rope_theta), d("norm_eps", a.norm_eps, b.norm_eps)})
    if (!s.empty()) return s;
  return "";
}

}  // namespace gossamer::model
