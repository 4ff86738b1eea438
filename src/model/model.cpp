// Model factory and the FLOP estimate.
#include "model/model.h"

#include "core/error.h"
#include "model/gpt2.h"
#include "model/llama.h"

namespace gossamer::model {

double flops_per_token(const Model& model, int seq_len) {
  const ModelConfig& c = model.config();
  return 6.0 * double(model.num_flop_params()) + 6.0 * c.n_layer * c.d_model * double(seq_len);
}

std::unique_ptr<Model> make_model(const ModelConfig& config, int max_batch, int max_seq,
                                  const kernels::OpTable& ops) {
  config.validate();
  if (config.family == "gpt2") return std::make_unique<Gpt2>(config, max_batch, max_seq, ops);
  if (config.family == "llama") return std::make_unique<Llama>(config, max_batch, max_seq, ops);
  fail("model.family: no model implementation for family \"%s\" in this build",
       config.family.c_str());
}

}  // namespace gossamer::model
