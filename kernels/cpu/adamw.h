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

// The same update on blocks of one flat tensor of n_param elements, each block with its own step
// count (dynamic sparse training, docs/SMET.md). Block j covers param[blocks[j] * B + i] for
// i < B (a last block is cut at n_param); its gradient and moments are compact, at j * B + i
// (a cut block's padding is never read or written). With s = steps[j] (>= 1) in place of t, and
// r = min(s / hp.warmup_steps, 1) (1 when hp.warmup_steps <= 1 or hp.ramp is NONE):
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   MOMENTUM_INPLACE: m *= r (the stored momentum: the ramp compounds, SMET's code)
//   param = param (1 - lr wd) - [r, LR_RAMP only] lr (m / (1 - beta1^s)) / (sqrt(v / (1 - beta2^s))
//   + eps)
// With hp.ramp_restarted_only, blocks with s >= hp.t (counting since the start) take r = 1.
// With every s = t and no ramp this is adamw_update, bit for bit. update_sq (optional, n_blocks)
// receives each block's sum of squared parameter changes (telemetry). hp.t is read only for
// ramp_restarted_only.
template <class T>
void adamw_update_blocks(T* param, const T* grad, T* m, T* v, const int32_t* blocks,
                         const int32_t* steps, size_t n_blocks, size_t block_size, size_t n_param,
                         T* update_sq, const AdamStep& hp);

}  // namespace gossamer::kernels::cpu
