// Hugging Face model directory -> our model: `gossamer import-hf` (writes a checkpoint
// directory), `train --init-from`, and `generate --checkpoint HF_DIR`.
// Reads config.json (hf_config.h) and model.safetensors, or the shards named by
// model.safetensors.index.json; any float dtype is converted to F32 (F32 is copied bit for
// bit, so export then import reproduces the weights exactly). Every tensor is checked against
// the shape config.json implies; a missing tensor, an unexpected one, a tied alias that differs
// from its original, or a lying safetensors header is an error naming the file and tensor.
// The imported checkpoint holds model.safetensors (our layout, as save_checkpoint writes it),
// tokenizer/ (our tokenizer files, when the directory has a tokenizer gossamer loads) and a
// trainer.json at step 0 with a resolved config; it has no optimizer state, so it is a start
// for `train --init-from`, not for --resume.
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

// `gossamer import-hf HF_DIR CHECKPOINT_DIR`.
void import_hf(const std::string& hf_dir, const std::string& checkpoint_dir, bool force);

// `train --init-from PATH`: weights from an HF directory, a checkpoint or a run directory (its
// latest checkpoint); throws naming the first model setting that differs from `model`'s.
void init_weights_from(const std::string& path, model::Model& model);

// "" when a and b describe the same model, else the first difference ("n_layer: 12 vs 2").
// init_std and padded_vocab do not count: they do not change what the weights compute.
std::string model_config_difference(const model::ModelConfig& a, const model::ModelConfig& b);

}  // namespace gossamer::hf
