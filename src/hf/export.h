// A model in memory -> a Hugging Face model directory (`gossamer export-hf`,
// commands/export_hf.h) that
// GPT2LMHeadModel / LlamaForCausalLM load unchanged:
//   config.json, generation_config.json  (hf_config.h)
//   model.safetensors                    F32, HF names and layouts (adapter.h); metadata
//                                        {"format": "pt", "gossamer_model_config": our model
//                                        section}, which import uses to restore padded_vocab
//   vocab.json + merges.txt | tokenizer.model, tokenizer_config.json  (tokenizer_files.h)
// Everything that can fail on input (checkpoint, tokenizer, output path) is checked before the
// first byte is written, and the directory appears only when complete (staging_dir.h).
#pragma once

#include <string>

#include "model/model.h"

namespace gossamer::hf {

// Exports an in-memory model; tokenizer_spec "" writes no tokenizer files.
void export_hf_model(const model::Model& model, const std::string& tokenizer_spec,
                     const std::string& hf_dir, bool force);

// The key under which model.safetensors' metadata records our model config (JSON).
inline constexpr const char* kHfGossamerConfigKey = "gossamer_model_config";

}  // namespace gossamer::hf
