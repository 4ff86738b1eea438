// AdamW update (Loshchilov & Hutter, decoupled weight decay), as torch.optim.AdamW:
//   param *= 1 - lr * weight_decay
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   param -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
// t is the 1-based update count. param, m, v updated in place; grad read only.
// The hyper-parameters come in one AdamStep (kernels/adam_step.h): lr, beta1, beta2, eps,
// weight_decay and t (code_form and catch_up_max are not read).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/adam_step.h"

namespace gossamer::kernels::cpu {

template <class T>
void adamw_update(T* param, const T* grad, T* m, T* v, size_t n, const AdamStep& hp);

}  // namespace gossamer::kernels::cpu
