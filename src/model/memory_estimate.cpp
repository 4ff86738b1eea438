// estimate_model_memory(): the family's own size lists, summed (see memory_estimate.h).
#include "model/memory_estimate.h"

#include <algorithm>
#include <numeric>

#include "model/decoder_model.h"
#include "model/family.h"

namespace gossamer::model {

ModelMemory estimate_model_memory(const ModelConfig& config, int max_batch, int max_seq,
                                  const kernels::OpTable& ops, kernels::MatmulDtype matmul_dtype) {
  const ModelFamilyInfo& family = family_info(config.family);
  ModelMemory m;
  const uint64_t P = family.parameter_count(config);
  m.parameter_count = P;
  m.parameters = P * sizeof(float);
  if (matmul_dtype == kernels::MatmulDtype::MATMUL_DTYPE_BF16) m.parameters += P * sizeof(uint16_t);
  m.gradients = P * sizeof(float);
  const std::vector<size_t> acts = family.activation_sizes(config, max_batch, max_seq, ops);
  m.activations = std::accumulate(acts.begin(), acts.end(), uint64_t{0}) * sizeof(float);
  // The head's chunk (DecoderModel::linear_rows for the (C, Vp) product), the hidden state's
  // gradient (B,T,C) and the head matrix's (Vp,C), made at the first training forward.
  const uint64_t BT = uint64_t(max_batch) * uint64_t(max_seq), C = uint64_t(config.d_model);
  const uint64_t Vp = uint64_t(config.padded_vocab_resolved());
  const uint64_t rows =
      std::clamp<uint64_t>(kLinearChunkElems / std::max<uint64_t>({C, Vp, 1}), 1, BT);
  m.head = (rows * Vp + BT * C + Vp * C) * sizeof(float);
  return m;
}

}  // namespace gossamer::model
