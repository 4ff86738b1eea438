// Reading a Hugging Face model directory into our model: the weights behind `gossamer
// import-hf`, `train --init-from HF_DIR` and `generate`/`eval --checkpoint HF_DIR`, which all
// come here through run/model_source.h.
// Reads config.json (hf_config.h) and model.safetensors, or the shards named by
// model.safetensors.index.json; any float dtype is converted to F32 (F32 is copied bit for
// bit, so export then import reproduces the weights exactly). Every tensor is checked against
// the shape config.json implies; a missing tensor, an unexpected one, a tied alias that differs
// from its original, or a lying safetensors header is an error naming the file and tensor.
#pragma once

#include <string>

#include "hf/hf_config.h"
#include "model/model.h"

namespace gossamer::hf {

// True when path is a directory whose config.json is an HF model config (has "model_type") and
// which is not one of our checkpoints (no trainer.json). A run directory's config.json is ours.
bool is_hf_model_dir(const std::string& path);

// config.json of an HF directory. When model.safetensors records our own model config (written
// by export-hf) and it describes the same model, that one is returned (it keeps padded_vocab).
HfModelSpec read_hf_model_spec(const std::string& hf_dir);

// Loads the directory's weights into `model`, which must have spec.config's shapes (checked).
void load_hf_weights(const std::string& hf_dir, const HfModelSpec& spec, model::Model& model);

// "gpt2: 12 layers, d_model 768, 12 heads, vocab 50257", for messages.
std::string describe_hf_model(const HfModelSpec& spec);

}  // namespace gossamer::hf
