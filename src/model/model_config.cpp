// ModelConfig::validate: every invariant the model code relies on, checked up front. The
// family-independent checks are here; each family's row (family.h) adds its own.
#include "model/model_config.h"

#include "core/error.h"

namespace gossamer::model {

void ModelConfig::validate(const std::string& p) const {
  const ModelFamilyInfo& info = family_info(family);  // throws for a value outside the enum
  GOSSAMER_CHECK(n_layer >= 1, "%sn_layer: must be >= 1, found %d", p.c_str(), n_layer);
  GOSSAMER_CHECK(d_model >= 1, "%sd_model: must be >= 1, found %d", p.c_str(), d_model);
  GOSSAMER_CHECK(n_head >= 1 && d_model % n_head == 0, "%sn_head: must divide d_model=%d, found %d",
                 p.c_str(), d_model, n_head);
  GOSSAMER_CHECK(vocab_size >= 2, "%svocab_size: must be >= 2, found %d", p.c_str(), vocab_size);
  GOSSAMER_CHECK(padded_vocab == 0 || padded_vocab >= vocab_size,
                 "%spadded_vocab: must be 0 or >= vocab_size=%d, found %d", p.c_str(), vocab_size,
                 padded_vocab);
  GOSSAMER_CHECK(max_seq_len >= 1, "%smax_seq_len: must be >= 1, found %d", p.c_str(), max_seq_len);
  GOSSAMER_CHECK(n_kv_head >= 0 && n_head % n_kv_head_resolved() == 0,
                 "%sn_kv_head: must divide n_head=%d, found %d", p.c_str(), n_head, n_kv_head);
  GOSSAMER_CHECK(d_ff >= 0, "%sd_ff: must be >= 0, found %d", p.c_str(), d_ff);
  GOSSAMER_CHECK(rope_theta > 0, "%srope_theta: must be > 0, found %g", p.c_str(), rope_theta);
  GOSSAMER_CHECK(norm_eps > 0, "%snorm_eps: must be > 0, found %g", p.c_str(), norm_eps);
  info.validate(*this, p);
  GOSSAMER_CHECK(init_std > 0, "%sinit_std: must be > 0, found %g", p.c_str(), init_std);
}

}  // namespace gossamer::model
