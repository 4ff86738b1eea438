// A trained model loaded for inference (`generate`, `eval`): from one of our checkpoints, a run
// directory (its latest checkpoint) or a Hugging Face model directory, together with the
// tokenizer that belongs to it. Invariant: the model's shapes are the source's own model
// config; the tokenizer covers every id of model.vocab_size (checked).
#pragma once

#include <memory>
#include <string>

#include "data/tokenizer.h"
#include "kernels/cpu/cpu_setup.h"
#include "model/model.h"
#include "train/run_config.h"

namespace gossamer::eval {

struct LoadedModel {
  std::string path;         // the resolved checkpoint or HF directory
  bool hf = false;          // an HF directory (no run config of ours)
  train::RunConfig config;  // the checkpoint's run config; for an HF directory only .model is set
  std::unique_ptr<model::Model> model;
  std::unique_ptr<data::Tokenizer> tokenizer;  // null when want_tokenizer was false
};

// Builds the model for batches up to max_batch x max_seq (0: model.max_seq_len) on `device`
// (not the checkpoint's kernels.device: a checkpoint is evaluated wherever the user is; `key`
// names the setting that chose it, for errors) and loads its weights. tokenizer_spec overrides
// the source's tokenizer ("" = the checkpoint's data.tokenizer, or the HF directory's own
// tokenizer files).
LoadedModel load_model_for_inference(const std::string& path, int max_batch, int max_seq,
                                     const std::string& tokenizer_spec, bool want_tokenizer,
                                     kernels::cpu::KernelsDevice device, const char* key);

}  // namespace gossamer::eval
