// State-dict adapters between our parameters and Hugging Face's, one explicit table per
// architecture (torchtitan's StateDictAdapter): each entry maps one parameter of our
// ParamLayout to one HF tensor with a named transform. The tables are the families' rows of
// hf_family.h (hf_gpt2.cpp: GPT2LMHeadModel, hf_llama.cpp: LlamaForCausalLM); docs/HF.md lists
// both. Every family: HF's embedding/head has exactly vocab_size rows; our padded rows (zero)
// are dropped on export and zero-filled on import.
// Invariant: make_hf_adapter() checks that its table covers every parameter of the layout
// exactly once and that each transform maps our shape onto the HF shape config.json implies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hf/hf_family.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "model/param_layout.h"

namespace gossamer::hf {

enum class HfTransform {
  HF_TRANSFORM_IDENTITY,    // same shape, same element order
  HF_TRANSFORM_TRANSPOSE,   // HF Conv1D (in, out) <-> our nn.Linear (out, in)
  HF_TRANSFORM_VOCAB_ROWS,  // HF (V, C) = our first V rows of (Vp, C); rows V.. are zero
};

const char* hf_transform_name(HfTransform t);

struct HfTensorMap {
  std::string ours;  // name in our ParamLayout
  std::string hf;    // name in the HF state dict (full, with the model's prefix)
  HfTransform transform = HfTransform::HF_TRANSFORM_IDENTITY;
  io::Shape hf_shape;  // shape HF expects for this config
};

struct HfAdapter {
  const HfFamily* family = nullptr;  // model_type, architecture, base prefix, ...
  std::vector<HfTensorMap> tensors;  // in HF module order (the order export writes)
  std::vector<HfTiedAlias> tied;     // aliases HF's model always has
  // HF buffers that some files carry and that hold no parameters: ignored on import.
  bool is_ignored_buffer(const std::string& hf_name) const;
};

// The adapter of config.family (its row of hf_family.h) for a model with this config and
// layout. Throws naming model.family when the family has no HF mapping.
HfAdapter make_hf_adapter(const model::ModelConfig& config, const model::ParamLayout& layout);

// Export: the HF tensor for `m` from our parameters `params` (the whole flat buffer). Returns a
// pointer into `params` when no copy is needed, else fills `scratch` and returns its data.
const float* hf_tensor_from_ours(const HfTensorMap& m, const model::ParamView& view,
                                 const float* params, std::vector<float>& scratch);
// Import: writes our parameter `view` into `params` from the HF tensor data (hf_shape).
void hf_tensor_to_ours(const HfTensorMap& m, const model::ParamView& view, const float* hf,
                       float* params);

}  // namespace gossamer::hf
