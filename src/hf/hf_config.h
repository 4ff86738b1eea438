// config.json / generation_config.json <-> ModelConfig, with Hugging Face's semantics:
// GPT2Config and LlamaConfig keys, and on import HF's defaults for absent keys (what
// `transformers` would use). Import rejects every setting our models cannot reproduce
// (another activation, GPT-2 LayerNorm epsilon other than 1e-5, rope_scaling, biases in
// Llama, ...) with an error naming config.json and the key, instead of loading a model that
// would silently compute something else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace gossamer::hf {

// Token ids written into config.json / generation_config.json when a tokenizer is exported.
struct HfSpecialTokens {
  std::optional<int64_t> bos, eos;
};

// config.json for our model (model_type, architectures, shapes, float32, no dropout).
nlohmann::ordered_json hf_config_json(const model::ModelConfig& config,
                                      const HfSpecialTokens& tokens);
// generation_config.json: bos/eos when known.
nlohmann::ordered_json hf_generation_config_json(const HfSpecialTokens& tokens);

struct HfModelSpec {
  model::ModelConfig config;  // padded_vocab 0 (auto); the rest from config.json
  bool tied_head = false;     // tie_word_embeddings: the head is the token embedding
};

// Parses an HF config.json (already read as JSON from `file`). Throws gossamer::Error naming
// the file and the key for an unknown model_type / architecture, a key of the wrong type, or a
// setting our models do not implement.
HfModelSpec hf_model_spec_from_json(const nlohmann::json& config, const std::string& file);

}  // namespace gossamer::hf
