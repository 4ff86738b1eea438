// Optimizer::attach and the names of the replica contract and state dtypes (see optimizer.h,
// state_tensor.h).
#include "optim/optimizer.h"

#include "core/error.h"

namespace gossamer::optim {

const char* replicas_name(Replicas replicas) {
  switch (replicas) {
    case Replicas::REPLICAS_IDENTICAL_EVERY_STEP:
      return "identical after every step";
    case Replicas::REPLICAS_IDENTICAL_AT_ROUND_END:
      return "identical at the end of each round";
    case Replicas::REPLICAS_INDEPENDENT:
      return "independent (never required identical)";
  }
  return "?";
}

size_t state_dtype_size(StateDType dtype) {
  switch (dtype) {
    case StateDType::STATE_DTYPE_F32:
    case StateDType::STATE_DTYPE_I32:
      return 4;
    case StateDType::STATE_DTYPE_BF16:
      return 2;
    case StateDType::STATE_DTYPE_U8:
      return 1;
  }
  return 0;
}

void Optimizer::attach(std::span<float> params, std::span<float> grads) {
  GOSSAMER_CHECK(!attached(), "%s: attach() called twice", name());
  GOSSAMER_CHECK(!params.empty() && params.size() == grads.size(),
                 "%s: parameter and gradient buffers of %zu and %zu elements", name(),
                 params.size(), grads.size());
  params_ = params;
  grads_ = grads;
  on_attach();
}

}  // namespace gossamer::optim
