// Implementation of the config.json mapping (see hf_config.h). Defaults for absent keys are
// GPT2Config's and LlamaConfig's in transformers; every rejected setting names the key.
#include "hf/hf_config.h"

#include <cmath>

#include "core/error.h"

namespace gossamer::hf {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

constexpr double kGpt2LayerNormEps = 1e-5;  // our GPT-2's LayerNorm epsilon (kernels/cpu)

void add_special_tokens(ordered_json& j, const HfSpecialTokens& t) {
  if (t.bos) j["bos_token_id"] = *t.bos;
  if (t.eos) j["eos_token_id"] = *t.eos;
}

// Typed access with HF's default for an absent (or, where HF allows it, null) key.
class Keys {
 public:
  Keys(const json& j, const std::string& file) : j_(j), file_(file) {}

  const json* find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  int integer(const char* key, int64_t dflt, int64_t min = 1) const {
    const json* v = find(key);
    if (!v) return int(dflt);
    GOSSAMER_CHECK(v->is_number_integer(), "%s: \"%s\" must be an integer, found %s", file_.c_str(),
                   key, v->dump().c_str());
    const int64_t x = v->get<int64_t>();
    GOSSAMER_CHECK(x >= min && x <= (int64_t(1) << 30), "%s: \"%s\" is %lld, expected >= %lld",
                   file_.c_str(), key, (long long)x, (long long)min);
    return int(x);
  }
  double number(const char* key, double dflt) const {
    const json* v = find(key);
    if (!v) return dflt;
    GOSSAMER_CHECK(v->is_number(), "%s: \"%s\" must be a number, found %s", file_.c_str(), key,
                   v->dump().c_str());
    return v->get<double>();
  }
  bool boolean(const char* key, bool dflt) const {
    const json* v = find(key);
    if (!v) return dflt;
    GOSSAMER_CHECK(v->is_boolean(), "%s: \"%s\" must be true or false, found %s", file_.c_str(),
                   key, v->dump().c_str());
    return v->get<bool>();
  }
  std::string string(const char* key, const char* dflt) const {
    const json* v = find(key);
    if (!v) return dflt;
    GOSSAMER_CHECK(v->is_string(), "%s: \"%s\" must be a string, found %s", file_.c_str(), key,
                   v->dump().c_str());
    return v->get<std::string>();
  }
  // Fails unless the key is absent/null or equal to `want`.
  template <class T>
  void require(const char* key, const T& want, const char* why) const {
    const json* v = find(key);
    if (!v) return;
    bool ok = false;
    try {
      ok = v->get<T>() == want;
    } catch (const json::exception&) {
    }
    GOSSAMER_CHECK(ok, "%s: \"%s\" is %s; %s", file_.c_str(), key, v->dump().c_str(), why);
  }
  const std::string& file() const { return file_; }

 private:
  const json& j_;
  const std::string& file_;
};

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

HfModelSpec gpt2_spec(const Keys& k) {
  HfModelSpec s;
  model::ModelConfig& c = s.config;
  c.family = "gpt2";
  c.vocab_size = k.integer("vocab_size", 50257);
  c.max_seq_len = k.integer("n_positions", 1024);
  c.d_model = k.integer("n_embd", 768);
  c.n_layer = k.integer("n_layer", 12);
  c.n_head = k.integer("n_head", 12);
  c.init_std = k.number("initializer_range", 0.02);
  GOSSAMER_CHECK(c.d_model % c.n_head == 0, "%s: \"n_head\" %d does not divide \"n_embd\" %d",
                 k.file().c_str(), c.n_head, c.d_model);
  if (k.find("n_inner"))
    k.require<int64_t>("n_inner", 4 * int64_t(c.d_model),
                       "gossamer's GPT-2 MLP is 4*n_embd wide (null)");
  const std::string act = k.string("activation_function", "gelu_new");
  GOSSAMER_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh",
                 "%s: \"activation_function\" is \"%s\"; gossamer's GPT-2 uses the tanh GELU "
                 "(\"gelu_new\")",
                 k.file().c_str(), act.c_str());
  const double eps = k.number("layer_norm_epsilon", 1e-5);
  GOSSAMER_CHECK(std::abs(eps - kGpt2LayerNormEps) <= 1e-12,
                 "%s: \"layer_norm_epsilon\" is %g; gossamer's GPT-2 LayerNorm uses 1e-05",
                 k.file().c_str(), eps);
  k.require("scale_attn_weights", true, "gossamer scales attention scores by 1/sqrt(head size)");
  k.require("scale_attn_by_inverse_layer_idx", false,
            "gossamer does not scale attention by the layer index");
  k.require("add_cross_attention", false, "gossamer's GPT-2 is decoder-only");
  k.require("tie_word_embeddings", true, "gossamer's GPT-2 ties lm_head to wte");
  s.tied_head = true;
  return s;
}

HfModelSpec llama_spec(const Keys& k) {
  HfModelSpec s;
  model::ModelConfig& c = s.config;
  c.family = "llama";
  c.vocab_size = k.integer("vocab_size", 32000);
  c.d_model = k.integer("hidden_size", 4096);
  c.d_ff = k.integer("intermediate_size", 11008);
  c.n_layer = k.integer("num_hidden_layers", 32);
  c.n_head = k.integer("num_attention_heads", 32);
  c.n_kv_head = k.integer("num_key_value_heads", c.n_head);
  c.max_seq_len = k.integer("max_position_embeddings", 2048);
  c.init_std = k.number("initializer_range", 0.02);
  c.norm_eps = k.number("rms_norm_eps", 1e-6);
  c.rope_theta = k.number("rope_theta", 10000.0);
  GOSSAMER_CHECK(c.d_model % c.n_head == 0,
                 "%s: \"num_attention_heads\" %d does not divide \"hidden_size\" %d",
                 k.file().c_str(), c.n_head, c.d_model);
  GOSSAMER_CHECK(c.n_head % c.n_kv_head == 0,
                 "%s: \"num_key_value_heads\" %d does not divide \"num_attention_heads\" %d",
                 k.file().c_str(), c.n_kv_head, c.n_head);
  GOSSAMER_CHECK(c.norm_eps > 0 && c.rope_theta > 0,
                 "%s: \"rms_norm_eps\" and \"rope_theta\" must be > 0", k.file().c_str());
  if (k.find("head_dim"))
    k.require<int64_t>("head_dim", c.d_model / c.n_head,
                       "gossamer's head size is hidden_size / num_attention_heads");
  k.require<std::string>("hidden_act", "silu", "gossamer's Llama MLP is SwiGLU (\"silu\")");
  GOSSAMER_CHECK(!k.find("rope_scaling"),
                 "%s: \"rope_scaling\" is set; gossamer implements plain RoPE only (null)",
                 k.file().c_str());
  k.require("attention_bias", false, "gossamer's Llama has no attention biases");
  k.require("mlp_bias", false, "gossamer's Llama has no MLP biases");
  s.tied_head = k.boolean("tie_word_embeddings", false);
  return s;
}

}  // namespace

ordered_json hf_config_json(const model::ModelConfig& c, const HfSpecialTokens& tokens) {
  ordered_json j;
  if (c.family == "gpt2") {
    j["architectures"] = {"GPT2LMHeadModel"};
    j["model_type"] = "gpt2";
    j["vocab_size"] = c.vocab_size;
    j["n_positions"] = c.max_seq_len;
    j["n_ctx"] = c.max_seq_len;
    j["n_embd"] = c.d_model;
    j["n_layer"] = c.n_layer;
    j["n_head"] = c.n_head;
    j["n_inner"] = nullptr;
    j["activation_function"] = "gelu_new";
    j["layer_norm_epsilon"] = kGpt2LayerNormEps;
    j["initializer_range"] = c.init_std;
    j["resid_pdrop"] = 0.0;  // gossamer trains without dropout
    j["embd_pdrop"] = 0.0;
    j["attn_pdrop"] = 0.0;
    j["scale_attn_weights"] = true;
    j["scale_attn_by_inverse_layer_idx"] = false;
    j["reorder_and_upcast_attn"] = false;
    j["tie_word_embeddings"] = true;
  } else if (c.family == "llama") {
    j["architectures"] = {"LlamaForCausalLM"};
    j["model_type"] = "llama";
    j["vocab_size"] = c.vocab_size;
    j["hidden_size"] = c.d_model;
    j["intermediate_size"] = c.d_ff_resolved();
    j["num_hidden_layers"] = c.n_layer;
    j["num_attention_heads"] = c.n_head;
    j["num_key_value_heads"] = c.n_kv_head_resolved();
    j["head_dim"] = c.d_model / c.n_head;
    j["hidden_act"] = "silu";
    j["max_position_embeddings"] = c.max_seq_len;
    j["initializer_range"] = c.init_std;
    j["rms_norm_eps"] = c.norm_eps;
    j["rope_theta"] = c.rope_theta;
    j["rope_scaling"] = nullptr;
    j["attention_bias"] = false;
    j["attention_dropout"] = 0.0;
    j["mlp_bias"] = false;
    j["pretraining_tp"] = 1;
    j["tie_word_embeddings"] = false;
  } else {
    fail("model.family: no Hugging Face mapping for family \"%s\" (supported: gpt2, llama)",
         c.family.c_str());
  }
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
  Keys k(j, file);
  GOSSAMER_CHECK(k.find("model_type"), "%s: no \"model_type\" (expected \"gpt2\" or \"llama\")",
                 file.c_str());
  const std::string type = k.string("model_type", "");
  HfModelSpec s;
  if (type == "gpt2") {
    check_architecture(j, file, "GPT2LMHeadModel");
    s = gpt2_spec(k);
  } else if (type == "llama") {
    check_architecture(j, file, "LlamaForCausalLM");
    s = llama_spec(k);
  } else {
    fail("%s: \"model_type\" is \"%s\"; gossamer imports \"gpt2\" and \"llama\" only", file.c_str(),
         type.c_str());
  }
  try {
    s.config.validate("");
  } catch (const Error& e) {
    fail("%s: not a model gossamer can build: %s", file.c_str(), e.what());
  }
  return s;
}

}  // namespace gossamer::hf
