// The model-family table of family.h: one row per ModelFamily, pointing at the family's own
// defaults, validation and constructor (declared with the family's model class).
#include "model/family.h"

#include <iterator>

#include "core/error.h"
#include "model/gpt2.h"
#include "model/llama.h"

namespace gossamer::model {

namespace {

template <class M>
std::unique_ptr<Model> make(const ModelConfig& config, int max_batch, int max_seq,
                            const kernels::OpTable& ops, kernels::MatmulDtype matmul_dtype) {
  return std::make_unique<M>(config, max_batch, max_seq, ops, matmul_dtype);
}

// The init streams spell "gpt2" and "llam" in ASCII. GPT-2's wte is also its LM head, so its
// lookup-only embedding is wpe; Llama's lm_head is untied, so wte is only looked up.
constexpr ModelFamilyInfo kFamilies[] = {
    {ModelFamily::MODEL_FAMILY_GPT2, &Gpt2::default_d_ff, &Gpt2::validate_config, &make<Gpt2>,
     &Gpt2::parameter_count, &Gpt2::activation_sizes, 0x6770'7432, "attn.proj.weight",
     "mlp.proj.weight", "wpe"},
    {ModelFamily::MODEL_FAMILY_LLAMA, &Llama::default_d_ff, &Llama::validate_config, &make<Llama>,
     &Llama::parameter_count, &Llama::activation_sizes, 0x6c6c'616d, "attn.o.weight",
     "mlp.down.weight", "wte"},
};

constexpr bool rows_follow_the_enum() {
  const auto& names = EnumNames<ModelFamily>::values;
  if (std::size(kFamilies) != std::size(names)) return false;
  for (size_t i = 0; i < std::size(kFamilies); ++i)
    if (kFamilies[i].family != names[i].first || int(names[i].first) != int(i)) return false;
  return true;
}
static_assert(rows_follow_the_enum(), "one row per ModelFamily, in enum order");

}  // namespace

std::span<const ModelFamilyInfo> model_families() {
  return kFamilies;
}

const ModelFamilyInfo& family_info(ModelFamily family) {
  const size_t i = size_t(family);
  if (i < std::size(kFamilies)) return kFamilies[i];
  fail("model.family: unknown model family %d (expected %s)", int(family),
       enum_choices<ModelFamily>().c_str());
}

}  // namespace gossamer::model
