// The Hugging Face side of each model family, one row per family keyed by model::ModelFamily:
// HF's model_type and architecture names, the state-dict table (adapter.h), the config.json
// writer and reader (hf_config.h), and what import must know about tied heads and parameter-
// free buffers. Each row lives in its own file (hf_gpt2.cpp, hf_llama.cpp); adapter.cpp,
// hf_config.cpp, import.cpp and export.cpp are family-independent and reach a family only
// through this table.
// Invariant: at most one row per ModelFamily and per model_type; a family without a row has no
// HF mapping (export and import fail naming model.family / model_type).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace gossamer::hf {

struct HfAdapter;
struct HfModelSpec;
class HfConfigKeys;

// An HF tensor that is an alias of another one in HF's model (tied weights): not written on
// export; on import accepted when present only if bitwise equal to `same_as`.
struct HfTiedAlias {
  std::string hf, same_as;
};

struct HfFamily {
  model::ModelFamily family;
  std::string model_type;    // config.json "model_type"
  std::string architecture;  // config.json "architectures"[0]
  std::string base_prefix;   // of every tensor name; absent in files saved from the base model
  // Suffixes of HF buffers that some files carry and that hold no parameters (GPT-2's attention
  // masks, Llama's rotary inv_freq): ignored on import.
  std::vector<std::string> ignored_buffer_suffixes;
  // A head that config.json may tie to the token embedding (tie_word_embeddings): when tied,
  // our head parameter (the table's tensor named `hf`) is read from `same_as`, and `hf`, when
  // present, must equal it. Empty `hf`: the family's head is never a parameter of ours.
  HfTiedAlias optional_tied_head;
  // Fills adapter.tensors (in HF module order) and adapter.tied for `config`.
  void (*add_tensors)(const model::ModelConfig& config, HfAdapter& adapter);
  // Writes the family's config.json keys after "architectures" and "model_type".
  void (*write_config)(const model::ModelConfig& config, nlohmann::ordered_json& j);
  // Reads the family's config.json keys into spec (spec.config.family is already set);
  // rejects every setting the family's model cannot reproduce.
  void (*read_config)(const HfConfigKeys& keys, HfModelSpec& spec);
};

// Every row.
std::span<const HfFamily* const> hf_families();
// The row of `family`; throws naming model.family when the family has no HF mapping.
const HfFamily& hf_family(model::ModelFamily family);
// The row whose model_type is `model_type`, or nullptr.
const HfFamily* find_hf_family(std::string_view model_type);
// The model_types of every row, quoted and joined: "\"gpt2\" and \"llama\"" (conjunction
// "and") or "\"gpt2\" or \"llama\"".
std::string hf_model_types(const char* conjunction);

// The rows, one file each.
const HfFamily& hf_gpt2_family();   // hf_gpt2.cpp
const HfFamily& hf_llama_family();  // hf_llama.cpp

}  // namespace gossamer::hf
