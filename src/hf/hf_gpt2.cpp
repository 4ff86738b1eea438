// The GPT-2 row of the HF family table (hf_family.h): our Gpt2 <-> transformers'
// GPT2LMHeadModel. Conv1D weights are (in, out), ours (out, in): transposed. lm_head.weight is
// tied to transformer.wte.weight: never written (as save_pretrained does), accepted on import
// only when equal to it. config.json holds GPT2Config keys; import rejects every GPT2Config
// setting our GPT-2 does not compute (another activation or LayerNorm epsilon, attention
// scaling variants, cross-attention, an untied head), naming the key.
#include <cmath>
#include <string>

#include "core/error.h"
#include "hf/adapter.h"
#include "hf/hf_config.h"
#include "hf/hf_config_keys.h"
#include "hf/hf_family.h"

namespace gossamer::hf {
namespace gpt2 {  // named, so a unity batch can hold both families' files
namespace {

using T = HfTransform;

constexpr double kGpt2LayerNormEps = 1e-5;  // our GPT-2's LayerNorm epsilon (kernels/cpu)

void add_tensors(const model::ModelConfig& cfg, HfAdapter& a) {
  const int64_t C = cfg.d_model, V = cfg.vocab_size, F = cfg.d_ff_resolved();
  auto add = [&](std::string ours, std::string hf, T t, io::Shape s) {
    a.tensors.push_back({std::move(ours), "transformer." + hf, t, std::move(s)});
  };
  add("wte", "wte.weight", T::HF_TRANSFORM_VOCAB_ROWS, {V, C});
  add("wpe", "wpe.weight", T::HF_TRANSFORM_IDENTITY, {cfg.max_seq_len, C});
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string o = "blocks." + std::to_string(l) + ".", h = "h." + std::to_string(l) + ".";
    add(o + "ln1.weight", h + "ln_1.weight", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "ln1.bias", h + "ln_1.bias", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "attn.qkv.weight", h + "attn.c_attn.weight", T::HF_TRANSFORM_TRANSPOSE, {C, 3 * C});
    add(o + "attn.qkv.bias", h + "attn.c_attn.bias", T::HF_TRANSFORM_IDENTITY, {3 * C});
    add(o + "attn.proj.weight", h + "attn.c_proj.weight", T::HF_TRANSFORM_TRANSPOSE, {C, C});
    add(o + "attn.proj.bias", h + "attn.c_proj.bias", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "ln2.weight", h + "ln_2.weight", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "ln2.bias", h + "ln_2.bias", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "mlp.fc.weight", h + "mlp.c_fc.weight", T::HF_TRANSFORM_TRANSPOSE, {C, F});
    add(o + "mlp.fc.bias", h + "mlp.c_fc.bias", T::HF_TRANSFORM_IDENTITY, {F});
    add(o + "mlp.proj.weight", h + "mlp.c_proj.weight", T::HF_TRANSFORM_TRANSPOSE, {F, C});
    add(o + "mlp.proj.bias", h + "mlp.c_proj.bias", T::HF_TRANSFORM_IDENTITY, {C});
  }
  add("ln_f.weight", "ln_f.weight", T::HF_TRANSFORM_IDENTITY, {C});
  add("ln_f.bias", "ln_f.bias", T::HF_TRANSFORM_IDENTITY, {C});
  a.tied.push_back({"lm_head.weight", "transformer.wte.weight"});
}

void write_config(const model::ModelConfig& c, nlohmann::ordered_json& j) {
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
}

// GPT2Config's defaults for absent keys.
void read_config(const HfConfigKeys& k, HfModelSpec& s) {
  model::ModelConfig& c = s.config;
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
}

}  // namespace
}  // namespace gpt2

const HfFamily& hf_gpt2_family() {
  static const HfFamily row{model::ModelFamily::MODEL_FAMILY_GPT2,
                            "gpt2",
                            "GPT2LMHeadModel",
                            "transformer.",
                            {".attn.bias", ".attn.masked_bias"},
                            {},
                            &gpt2::add_tensors,
                            &gpt2::write_config,
                            &gpt2::read_config};
  return row;
}

}  // namespace gossamer::hf
