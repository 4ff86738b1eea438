// State-dict adapters between our parameters and Hugging Face's, one explicit table per
// architecture (torchtitan's StateDictAdapter): each entry maps one parameter of our
// ParamLayout to one HF tensor with a named transform; docs/HF.md lists both tables.
//   GPT2LMHeadModel: Conv1D weights are (in, out), ours (out, in): transposed. lm_head.weight is
//     tied to transformer.wte.weight: never written (as save_pretrained does), accepted on
//     import only when equal to it.
//   LlamaForCausalLM: every matrix is nn.Linear like ours; our RoPE uses HF's rotate_half
//     convention (pairs (i, i + hs/2)), so q_proj/k_proj need no permutation.
//   Both: HF's embedding/head has exactly vocab_size rows; our padded rows (zero) are dropped on
//     export and zero-filled on import.
// Invariant: make_hf_adapter() checks that its table covers every parameter of the layout
// exactly once and that each transform maps our shape onto the HF shape config.json implies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// An HF tensor that is an alias of another one in HF's model (tied weights): not written on
// export; on import accepted when present only if bitwise equal to `same_as`.
struct HfTiedAlias {
  std::string hf, same_as;
};

struct HfAdapter {
  std::string model_type;    // config.json "model_type": "gpt2" | "llama"
  std::string architecture;  // config.json "architectures"[0]
  std::string base_prefix;   // "transformer." | "model.": absent in files saved from the base model
  std::vector<HfTensorMap> tensors;  // in HF module order (the order export writes)
  std::vector<HfTiedAlias> tied;
  // HF buffers that some files carry and that hold no parameters (GPT-2's attention masks
  // ".attn.bias"/".attn.masked_bias", Llama's ".rotary_emb.inv_freq"): ignored on import.
  bool is_ignored_buffer(const std::string& hf_name) const;
};

// The adapter of config.family for a model with this config and layout.
// Throws naming model.family when the family has no HF mapping.
HfAdapter make_hf_adapter(const model::ModelConfig& config, const model::ParamLayout& layout);

// Export: the HF tensor for `m` from our parameters `params` (the whole flat buffer). Returns a
// pointer into `params` when no copy is needed, else fills `scratch` and returns its data.
const float* hf_tensor_from_ours(const HfTensorMap& m, const model::ParamView& view,
                                 const float* params, std::vector<float>& scratch);
// Import: writes our parameter `view` into `params` from the HF tensor data (hf_shape).
void hf_tensor_to_ours(const HfTensorMap& m, const model::ParamView& view, const float* hf,
                       float* params);

}  // namespace gossamer::hf
