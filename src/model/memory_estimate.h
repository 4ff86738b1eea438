// What a model allocates, known before it is built: its parameters and their gradients (fp32,
// plus the bf16 copy of the parameters for bf16 products), the activations backward keeps for
// (max_batch, max_seq), and the LM head's chunk buffers. The activations come from the family's
// activation_sizes(), the list its constructor allocates from, so the estimate cannot drift from
// the model; the parameter count from its parameter_count(), checked against the layout by the
// model tests. Smaller buffers (tokens, losses, bf16 scratch) are left out: the estimate is a
// lower bound, good for refusing a run that cannot fit (train/memory_check.h).
#pragma once

#include <cstdint>

#include "kernels/matmul_dtype.h"
#include "model/family.h"  // kernels::OpTable, declared
#include "model/model_config.h"

namespace gossamer::model {

struct ModelMemory {
  uint64_t parameter_count = 0;
  uint64_t parameters = 0;   // bytes: fp32 weights, and their bf16 copy for bf16 products
  uint64_t gradients = 0;    // bytes
  uint64_t activations = 0;  // bytes: what backward keeps, attention scratch included
  uint64_t head = 0;         // bytes: the LM head's chunk of logits and the two head gradients
  uint64_t total() const { return parameters + gradients + activations + head; }
};

// `config` must be validated (ModelConfig::validate).
ModelMemory estimate_model_memory(const ModelConfig& config, int max_batch, int max_seq,
                                  const kernels::OpTable& ops, kernels::MatmulDtype matmul_dtype);

}  // namespace gossamer::model
