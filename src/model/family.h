// Model families: the enum `model.family` parses into (EnumNames<ModelFamily> holds the names
// config files use), and the one table of what differs per family at the model level: the
// factory, the validation of family-specific settings, the default MLP width, and the
// initialisation stream, residual projections and lookup-only embedding DecoderModel reads.
// Each row's functions live with the family's model (gpt2.cpp, llama.cpp). Code outside src/model
// that depends on the family keys its own table on the enum (src/hf/hf_family.h), never on a name.
// Invariant: every ModelFamily value has exactly one row, and model_families() lists the rows
// in enum order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "kernels/matmul_dtype.h"

namespace gossamer::kernels {
template <class Real>
struct BasicOpTable;
using OpTable = BasicOpTable<float>;
}  // namespace gossamer::kernels

namespace gossamer::model {

enum class ModelFamily {
  MODEL_FAMILY_GPT2,   // learned positions, LayerNorm, GELU MLP, biases, tied embeddings
  MODEL_FAMILY_LLAMA,  // RoPE, RMSNorm, SwiGLU MLP, grouped-query attention, untied head
};

}  // namespace gossamer::model

namespace gossamer {

template <>
struct EnumNames<model::ModelFamily> {
  static constexpr std::pair<model::ModelFamily, std::string_view> values[] = {
      {model::ModelFamily::MODEL_FAMILY_GPT2, "gpt2"},
      {model::ModelFamily::MODEL_FAMILY_LLAMA, "llama"},
  };
};

}  // namespace gossamer

namespace gossamer::model {

// The family's name in configs ("gpt2"), NUL-terminated (the names are string literals).
inline const char* family_name(ModelFamily family) {
  return enum_name(family).data();
}

struct ModelConfig;
class Model;

struct ModelFamilyInfo {
  ModelFamily family;
  // MLP hidden width when model.d_ff is 0.
  int (*default_d_ff)(int d_model);
  // Checks the settings this family constrains, after the family-independent checks; throws
  // gossamer::Error naming the key (prefixed by `path`, e.g. "model.").
  void (*validate)(const ModelConfig& config, const std::string& path);
  // Builds the family's model for a validated config.
  std::unique_ptr<Model> (*make)(const ModelConfig& config, int max_batch, int max_seq,
                                 const kernels::OpTable& ops, kernels::MatmulDtype matmul_dtype);
  // Without building it: the model's parameter count, and the float count of each activation
  // buffer its constructor allocates (the constructor allocates from this very list).
  size_t (*parameter_count)(const ModelConfig& config);
  std::vector<size_t> (*activation_sizes)(const ModelConfig& config, int max_batch, int max_seq,
                                          const kernels::OpTable& ops);
  // The Rng stream DecoderModel::init_weights() draws from.
  uint64_t init_stream;
  // Name suffixes of the residual projections (the attention's and the MLP's output
  // matrices), initialised ~ N(0, init_std / sqrt(2 n_layer)).
  std::string_view residual_proj_attn, residual_proj_mlp;
  // The embedding that is only looked up, never multiplied: left out of num_flop_params().
  std::string_view lookup_embedding;
};

// Every row, in enum order.
std::span<const ModelFamilyInfo> model_families();
// The row of `family`; throws naming model.family for a value outside the enum.
const ModelFamilyInfo& family_info(ModelFamily family);

}  // namespace gossamer::model
