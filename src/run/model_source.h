// Where a model's weights come from, read one way for every command: one of our checkpoints, a
// run directory (its latest checkpoint) or a Hugging Face model directory. `train --init-from`,
// `generate`, `eval`, `export-hf` and the benchmarks load through here. Invariant: weights are
// only loaded into a model whose shapes are the source's own model config (checked, naming the
// first difference); the tokenizer of a loaded model covers every id of its vocab_size.
#pragma once

#include <memory>
#include <string>

#include "data/tokenizer.h"
#include "kernels/cpu/cpu_setup.h"
#include "model/model.h"
#include "run/run_config.h"

namespace gossamer::run {

struct ModelSource {
  std::string path;  // the resolved checkpoint or HF directory
  bool hf = false;   // an HF directory (no run config of ours)
  RunConfig config;  // the checkpoint's run config; for an HF directory only .model is set
};

// Resolves `path` and reads its model config (nothing of the weights yet).
ModelSource resolve_model_source(const std::string& path);

// Loads the source's weights into `model`, which must be of the source's model (checked).
void load_weights(const ModelSource& source, model::Model& model);

// `train --init-from PATH`: weights from an HF directory, a checkpoint or a run directory (its
// latest checkpoint); throws naming the first model setting that differs from `model`'s.
void init_weights_from(const std::string& path, model::Model& model);

struct LoadedModel : ModelSource {
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

}  // namespace gossamer::run
