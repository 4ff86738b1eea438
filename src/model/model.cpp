// Model factory (through the family table, family.h) and the FLOP estimate.
#include "model/model.h"

#include "core/error.h"
#include "model/family.h"

namespace gossamer::model {

double flops_per_token(const Model& model, int seq_len) {
  const ModelConfig& c = model.config();
  return 6.0 * double(model.num_flop_params()) + 6.0 * c.n_layer * c.d_model * double(seq_len);
}

void Model::copy_logits_to(size_t offset, std::span<float> out) const {
  const size_t total = readable_logits();
  GOSSAMER_CHECK(offset <= total && out.size() <= total - offset,
                 "model: logits %zu..%zu requested, the last forward without targets left %zu",
                 offset, offset + out.size(), total);
  if (!out.empty()) memory().download(out.data(), logits() + offset, out.size() * sizeof(float));
}

std::unique_ptr<Model> make_model(const ModelConfig& config, int max_batch, int max_seq,
                                  const kernels::OpTable& ops, kernels::MatmulDtype matmul_dtype) {
  config.validate();
  return family_info(config.family).make(config, max_batch, max_seq, ops, matmul_dtype);
}

}  // namespace gossamer::model
