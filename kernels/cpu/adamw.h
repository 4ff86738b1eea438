// AdamW update (Loshchilov & Hutter, decoupled weight decay), as torch.optim.AdamW:
//   param *= 1 - lr * weight_decay
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   param -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
// t is the 1-based update count. param, m, v updated in place; grad read only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels::cpu {

template <class T>
void adamw_update(T* param, const T* grad, T* m, T* v, size_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, int64_t t);

}  // namespace gossamer::kernels::cpu
