// The table of hf_family.h: the rows of hf_gpt2.cpp and hf_llama.cpp and the lookups by
// model family and by HF model_type.
#include "hf/hf_family.h"

#include <array>

#include "core/error.h"

namespace gossamer::hf {

std::span<const HfFamily* const> hf_families() {
  static const std::array<const HfFamily*, 2> rows = {&hf_gpt2_family(), &hf_llama_family()};
  return rows;
}

const HfFamily& hf_family(model::ModelFamily family) {
  for (const HfFamily* f : hf_families())
    if (f->family == family) return *f;
  std::string supported;
  for (const HfFamily* f : hf_families())
    supported += (supported.empty() ? "" : ", ") + std::string(model::family_name(f->family));
  fail("model.family: no Hugging Face mapping for family \"%s\" (supported: %s)",
       model::family_name(family), supported.c_str());
}

const HfFamily* find_hf_family(std::string_view model_type) {
  for (const HfFamily* f : hf_families())
    if (f->model_type == model_type) return f;
  return nullptr;
}

std::string hf_model_types(const char* conjunction) {
  const auto rows = hf_families();
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) out += i + 1 == rows.size() ? std::string(" ") + conjunction + " " : ", ";
    out += "\"" + rows[i]->model_type + "\"";
  }
  return out;
}

}  // namespace gossamer::hf
