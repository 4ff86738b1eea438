// The Llama row of the HF family table (hf_family.h): our Llama <-> transformers'
// LlamaForCausalLM. Every matrix is nn.Linear like ours, and our RoPE uses HF's rotate_half
// convention (pairs (i, i + hs/2)), so q_proj/k_proj need no permutation. A config.json with
// tie_word_embeddings loads lm_head from model.embed_tokens.weight. config.json holds
// LlamaConfig keys; import rejects every LlamaConfig setting our Llama does not compute
// (another activation, rope_scaling, a head_dim other than hidden_size/heads, biases), naming
// the key.
#include <string>

#include "core/error.h"
#include "hf/adapter.h"
#include "hf/hf_config.h"
#include "hf/hf_config_keys.h"
#include "hf/hf_family.h"

namespace gossamer::hf {
namespace llama {  // named, so a unity batch can hold both families' files
namespace {

using T = HfTransform;

void add_tensors(const model::ModelConfig& cfg, HfAdapter& a) {
  const int64_t C = cfg.d_model, V = cfg.vocab_size, F = cfg.d_ff_resolved();
  const int64_t hs = C / cfg.n_head, q = cfg.n_head * hs, kv = cfg.n_kv_head_resolved() * hs;
  auto add = [&](std::string ours, std::string hf, T t, io::Shape s) {
    a.tensors.push_back({std::move(ours), std::move(hf), t, std::move(s)});
  };
  add("wte", "model.embed_tokens.weight", T::HF_TRANSFORM_VOCAB_ROWS, {V, C});
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string o = "blocks." + std::to_string(l) + ".";
    const std::string h = "model.layers." + std::to_string(l) + ".";
    add(o + "attn_norm.weight", h + "input_layernorm.weight", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "attn.q.weight", h + "self_attn.q_proj.weight", T::HF_TRANSFORM_IDENTITY, {q, C});
    add(o + "attn.k.weight", h + "self_attn.k_proj.weight", T::HF_TRANSFORM_IDENTITY, {kv, C});
    add(o + "attn.v.weight", h + "self_attn.v_proj.weight", T::HF_TRANSFORM_IDENTITY, {kv, C});
    add(o + "attn.o.weight", h + "self_attn.o_proj.weight", T::HF_TRANSFORM_IDENTITY, {C, q});
    add(o + "mlp_norm.weight", h + "post_attention_layernorm.weight", T::HF_TRANSFORM_IDENTITY,
        {C});
    add(o + "mlp.gate.weight", h + "mlp.gate_proj.weight", T::HF_TRANSFORM_IDENTITY, {F, C});
    add(o + "mlp.up.weight", h + "mlp.up_proj.weight", T::HF_TRANSFORM_IDENTITY, {F, C});
    add(o + "mlp.down.weight", h + "mlp.down_proj.weight", T::HF_TRANSFORM_IDENTITY, {C, F});
  }
  add("norm_f.weight", "model.norm.weight", T::HF_TRANSFORM_IDENTITY, {C});
  add("lm_head.weight", "lm_head.weight", T::HF_TRANSFORM_VOCAB_ROWS, {V, C});
}

void write_config(const model::ModelConfig& c, nlohmann::ordered_json& j) {
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
}

// LlamaConfig's defaults for absent keys.
void read_config(const HfConfigKeys& k, HfModelSpec& s) {
  model::ModelConfig& c = s.config;
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
}

}  // namespace
}  // namespace llama

const HfFamily& hf_llama_family() {
  static const HfFamily row{model::ModelFamily::MODEL_FAMILY_LLAMA,
                            "llama",
                            "LlamaForCausalLM",
                            "model.",
                            {".rotary_emb.inv_freq"},
                            {"lm_head.weight", "model.embed_tokens.weight"},
                            &llama::add_tensors,
                            &llama::write_config,
                            &llama::read_config};
  return row;
}

}  // namespace gossamer::hf
