// AdamS update ("momentum itself can be a normalizer"; ALGORITHMS.md 1.2): one state tensor m.
// Official-code form (code_form = true), bias factor c = 1 - beta1^t at the current t:
//   param *= 1 - lr * weight_decay
//   den = sqrt(beta2 (m/c)^2 + (1 - beta2) g^2) + eps        (m: the PREVIOUS momentum)
//   m = beta1 m + (1 - beta1) g
//   param -= lr * (m/c) / den
// Paper form (code_form = false): the same without bias correction (c = 1).
// t is the 1-based update count. param and m updated in place; grad read only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels::cpu {

template <class T>
void adams_update(T* param, const T* grad, T* m, size_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, int64_t t, bool code_form);

}  // namespace gossamer::kernels::cpu

namespace gossamer::kernels::cpu {

// AdamS on the coordinates idx[0..k) only: param[idx[j]], m[idx[j]] with gradient g[j] (a
// compact buffer); weight decay where decay[idx[j]] != 0. The same arithmetic as adams_update.
template <class T>
void adams_update_indexed(T* param, T* m, const uint32_t* idx, const T* g, const uint8_t* decay,
                          size_t k, float lr, float beta1, float beta2, float eps,
                          float weight_decay, int64_t t, bool code_form);

}  // namespace gossamer::kernels::cpu
