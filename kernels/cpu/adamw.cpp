// CPU AdamW update: one fused, vectorised pass over param, grad, m, v.
#include "kernels/cpu/adamw.h"

#include <algorithm>
#include <cmath>

namespace gossamer::kernels::cpu {

template <class T>
void adamw_update(T* param, const T* grad, T* m, T* v, size_t n, const AdamStep& hp) {
  const T b1 = hp.beta1, b2 = hp.beta2;
  const T bc1 = T(1) - static_cast<T>(std::pow(double(hp.beta1), double(hp.t)));
  const T bc2 = T(1) - static_cast<T>(std::pow(double(hp.beta2), double(hp.t)));
  const T step_size = T(hp.lr) / bc1;
  const T inv_sqrt_bc2 = T(1) / std::sqrt(bc2);
  const T decay = T(1) - T(hp.lr) * T(hp.weight_decay);
  const T e = hp.eps;
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) {
    const T g = grad[i];
    const T mi = b1 * m[i] + (T(1) - b1) * g;
    const T vi = b2 * v[i] + (T(1) - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + e);
  }
}

namespace {

// The bias corrections 1 - beta^s of a step count s (two pow calls), kept for the next block:
// most blocks share the count of the previous one.
template <class T>
struct BiasCorrection {
  int64_t s = -1;
  T bc1 = 0, bc2 = 0;
  void at(int64_t count, const AdamStep& hp) {
    if (count == s) return;
    s = count;
    bc1 = T(1) - static_cast<T>(std::pow(double(hp.beta1), double(s)));
    bc2 = T(1) - static_cast<T>(std::pow(double(hp.beta2), double(s)));
  }
};

// One block's update: `n` consecutive coordinates sharing the step count bc.s; returns the sum
// of squared parameter changes.
template <class T>
T adamw_block(T* param, const T* grad, T* m, T* v, size_t n, const BiasCorrection<T>& bc,
              const AdamStep& hp) {
  const int64_t s = bc.s;
  const T b1 = hp.beta1, b2 = hp.beta2;
  const bool ramped = hp.ramp != WarmupRamp::NONE && hp.warmup_steps > 1 && s < hp.warmup_steps &&
                      (!hp.ramp_restarted_only || s < hp.t);
  const T r = ramped ? T(double(s) / double(hp.warmup_steps)) : T(1);
  const T m_scale = hp.ramp == WarmupRamp::MOMENTUM_INPLACE ? r : T(1);
  const T step_size = (hp.ramp == WarmupRamp::LR_RAMP ? r : T(1)) * T(hp.lr) / bc.bc1;
  const T inv_sqrt_bc2 = T(1) / std::sqrt(bc.bc2);
  const T decay = T(1) - T(hp.lr) * T(hp.weight_decay);
  const T e = hp.eps;
  T change_sq = 0;
#pragma omp simd reduction(+ : change_sq)
  for (size_t i = 0; i < n; ++i) {
    const T g = grad[i];
    T mi = b1 * m[i] + (T(1) - b1) * g;
    const T vi = b2 * v[i] + (T(1) - b2) * g * g;
    if (ramped) mi *= m_scale;
    m[i] = mi;
    v[i] = vi;
    const T before = param[i];
    param[i] = before * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + e);
    change_sq += (param[i] - before) * (param[i] - before);
  }
  return change_sq;
}

}  // namespace

template <class T>
void adamw_update_blocks(T* param, const T* grad, T* m, T* v, const int32_t* blocks,
                         const int32_t* steps, size_t n_blocks, size_t block_size, size_t n_param,
                         T* update_sq, const AdamStep& hp) {
  const size_t B = block_size;
  if (n_blocks == 1 && B >= 4096) {  // one large block (a dense tensor): split its elements
    const size_t n = std::min(B, n_param - size_t(blocks[0]) * B);
    const size_t chunk = 4096, chunks = (n + chunk - 1) / chunk;
    const size_t begin = size_t(blocks[0]) * B;
    BiasCorrection<T> bc;
    bc.at(steps[0], hp);
    T total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (size_t c = 0; c < chunks; ++c) {
      const size_t o = c * chunk;
      total +=
          adamw_block(param + begin + o, grad + o, m + o, v + o, std::min(chunk, n - o), bc, hp);
    }
    if (update_sq) update_sq[0] = total;
    return;
  }
#pragma omp parallel
  {
    BiasCorrection<T> bc;  // per thread
#pragma omp for schedule(static)
    for (size_t j = 0; j < n_blocks; ++j) {
      const size_t begin = size_t(blocks[j]) * B;
      const size_t n = begin + B <= n_param ? B : n_param - begin;
      bc.at(steps[j], hp);
      const T sq = adamw_block(param + begin, grad + j * B, m + j * B, v + j * B, n, bc, hp);
      if (update_sq) update_sq[j] = sq;
    }
  }
}

template void adamw_update<float>(float*, const float*, float*, float*, size_t, const AdamStep&);
template void adamw_update<double>(double*, const double*, double*, double*, size_t,
                                   const AdamStep&);
template void adamw_update_blocks<float>(float*, const float*, float*, float*, const int32_t*,
                                         const int32_t*, size_t, size_t, size_t, float*,
                                         const AdamStep&);
template void adamw_update_blocks<double>(double*, const double*, double*, double*, const int32_t*,
                                          const int32_t*, size_t, size_t, size_t, double*,
                                          const AdamStep&);

}  // namespace gossamer::kernels::cpu
