// AdamS update ("momentum itself can be a normalizer"; docs/SCAPE.md): one state tensor m.
// Official-code form (code_form = true), bias factor c = 1 - beta1^t at the current t:
//   param *= 1 - lr * weight_decay
//   den = sqrt(beta2 (m/c)^2 + (1 - beta2) g^2) + eps        (m: the PREVIOUS momentum)
//   m = beta1 m + (1 - beta1) g
//   param -= lr * (m/c) / den
// Paper form (code_form = false): the same without bias correction (c = 1).
// t is the 1-based update count. param and m updated in place; grad read only.
// The hyper-parameters come in one AdamStep (kernels/adam_step.h): lr, beta1, beta2, eps,
// weight_decay, t and code_form; adams_update_from_momentum also reads catch_up_max.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/adam_step.h"

namespace gossamer::kernels::cpu {

template <class T>
void adams_update(T* param, const T* grad, T* m, size_t n, const AdamStep& hp);

}  // namespace gossamer::kernels::cpu

namespace gossamer::kernels::cpu {

// AdamS on k coordinates only: coordinate j is param[pidx[j]] with state st.m[idx[j]] and
// gradient g[j] (a compact buffer); weight decay where st.decay[idx[j]] != 0. The parameters are
// the flat buffer and the state the owner's packed buffers, hence two index lists (equal when
// the state covers the whole space). last[i] is the step of coordinate i's previous update
// (negative: unknown, counted as the previous step) and becomes t; its age is
// a = max(1, t - last[i]). With hp.age_normaliser the normaliser sees g / a instead of g:
//   den = sqrt(beta2 (m/c)^2 + (1 - beta2) (g/a)^2) + eps
// and with hp.lazy_decay the decay factor is (1 - lr wd)^a. Both off: the arithmetic of
// adams_update. hp.accumulated replaces the one AdamS step by a steps at once, as if the
// gradient had been a constant gbar over them (S = beta1 (1 - beta1^a) / (1 - beta1)):
//   GRADIENT_REPLAY: g is the gradient mass of the a steps, gbar = g / a, base = m
//   MOMENTUM_SUM:    g is the sum of the a momenta, base = m (0 with hp.momentum_restarts),
//                    gbar = (g - base S) / (a - S)
//   m_new = beta1^a base + (1 - beta1^a) gbar,  m_prev = (m_new - (1 - beta1) gbar) / beta1
//   den = sqrt(beta2 (m_prev/c)^2 + (1 - beta2) gbar^2) + eps
//   param -= lr (sum of the a momenta, base S + gbar (a - S), or g itself) / c / den
// (with a = 1 both are adams_update). With st.den_sq, hp.frozen_normaliser replaces den by
// sqrt(den_sq[i]) (1-bit Adam's frozen second moment, for AdamS's normaliser); otherwise den_sq[i]
// becomes beta2 den_sq[i] + (1 - beta2) den^2 (den^2 when it is 0). When st.dir is not null,
// dir[pidx[j]] receives the step per unit of lr, (m_new/c) / den (SCAPE's stale momentum).
// State (m, last, decay, den_sq) by idx[j]; see IndexedAdamsState.
template <class T>
void adams_update_indexed(T* param, const uint32_t* pidx, const uint32_t* idx, const T* g, size_t k,
                          const IndexedAdamsState<T>& st, const AdamStep& hp);

}  // namespace gossamer::kernels::cpu

namespace gossamer::kernels::cpu {

// AdamS from the exact current momentum on k coordinates (SCAPE reading B, docs/SCAPE.md):
// coordinate j is param[pidx[j]] with state index i = idx[j]; m_now[j] is its momentum after
// step t, m_last[i] and last[i] its momentum and step at its previous update. With a = t - last[i],
// the gradient for the normaliser is rebuilt as if it had been constant over those a steps:
//   gbar = (m_now - beta1^a m_last) / (1 - beta1^a),   m_prev = (m_now - (1 - beta1) gbar) / beta1
//   den  = sqrt(beta2 (m_prev/c)^2 + (1 - beta2) gbar^2) + eps
// and the coordinate moves s = min(a, catch_up_max) steps at once:
//   param = param (1 - lr weight_decay)^s - s lr (m_now/c) / den   (param at pidx[j])
// then m_last[i] = m_now[j], last[i] = t. With a = 1 this is adams_update (gbar = g exactly).
// last[] holds steps as float (exact below 2^24).
template <class T>
void adams_update_from_momentum(T* param, const uint32_t* pidx, T* m_last, float* last,
                                const uint32_t* idx, const T* m_now, const uint8_t* decay, size_t k,
                                const AdamStep& hp);

}  // namespace gossamer::kernels::cpu
