// CPU AdamS update: one fused, vectorised pass over param, grad, m.
#include "kernels/cpu/adams.h"

#include <algorithm>
#include <cmath>

namespace gossamer::kernels::cpu {

namespace {

// The per-call constants every AdamS kernel shares: betas, the bias factor 1/c at step t (1 in
// the paper form), the decay factor 1 - lr wd, eps and lr, in the kernel's precision.
template <class T>
struct AdamsConstants {
  T b1, b2, inv_c, decay, eps, lr;
  explicit AdamsConstants(const AdamStep& hp)
      : b1(hp.beta1),
        b2(hp.beta2),
        inv_c(hp.code_form
                  ? T(1) / (T(1) - static_cast<T>(std::pow(double(hp.beta1), double(hp.t))))
                  : T(1)),
        decay(T(1) - T(hp.lr) * T(hp.weight_decay)),
        eps(hp.eps),
        lr(hp.lr) {}
};

}  // namespace

template <class T>
void adams_update(T* param, const T* grad, T* m, size_t n, const AdamStep& hp) {
  const AdamsConstants<T> k(hp);
  const T b1 = k.b1, b2 = k.b2, inv_c = k.inv_c, decay = k.decay, e = k.eps, step = k.lr;
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) {
    const T g = grad[i];
    const T prev = m[i] * inv_c;
    const T den = std::sqrt(b2 * prev * prev + (T(1) - b2) * g * g) + e;
    const T mi = b1 * m[i] + (T(1) - b1) * g;
    m[i] = mi;
    param[i] = param[i] * decay - step * (mi * inv_c) / den;
  }
}

namespace {

// One coordinate of adams_update_indexed before the parameter moves: the new momentum, the
// normaliser and the sum of momenta the move applies (formulas in kernels/cpu/adams.h).
template <class T>
struct IndexedMove {
  T m, den, num;
};

template <class T>
IndexedMove<T> indexed_move(T m, T g, int64_t a, const AdamsConstants<T>& c, const AdamStep& hp) {
  const T b1 = c.b1, b2 = c.b2, inv_c = c.inv_c;
  if (hp.accumulated == Accumulated::ONE_GRADIENT) {
    const T gn = hp.age_normaliser && a > 1 ? g / T(a) : g;
    const T prev = m * inv_c;
    const T mt = b1 * m + (T(1) - b1) * g;
    return {mt, std::sqrt(b2 * prev * prev + (T(1) - b2) * gn * gn) + c.eps, mt};
  }
  // The a steps since the last update, each with the same gradient gbar: the momenta
  // m_j = b1^j base + (1 - b1^j) gbar (j = 1..a) sum to base S + gbar (a - S).
  const T b1a = a == 1 ? b1 : static_cast<T>(std::pow(double(hp.beta1), double(a)));
  const T S = b1 * (T(1) - b1a) / (T(1) - b1);
  const bool momentum = hp.accumulated == Accumulated::MOMENTUM_SUM;
  const T base = momentum && hp.momentum_restarts ? T(0) : m;
  const T gbar = momentum ? (g - base * S) / (T(a) - S) : g / T(a);
  const T mt = b1a * base + (T(1) - b1a) * gbar;
  const T prev = (a == 1 ? base : (mt - (T(1) - b1) * gbar) / b1) * inv_c;  // m_{a-1}
  const T den = std::sqrt(b2 * prev * prev + (T(1) - b2) * gbar * gbar) + c.eps;
  return {mt, den, momentum ? g : base * S + gbar * (T(a) - S)};
}

}  // namespace

template <class T>
void adams_update_indexed(T* param, const uint32_t* pidx, const uint32_t* idx, const T* g, size_t k,
                          const IndexedAdamsState<T>& st, const AdamStep& hp) {
  const AdamsConstants<T> c(hp);
  const T inv_c = c.inv_c, decay_factor = c.decay, step = c.lr, b2 = c.b2;
  const int64_t t = hp.t;
  const bool lazy_decay = hp.lazy_decay, frozen = hp.frozen_normaliser;
  T* m = st.m;
  float* last = st.last;
  float* den_sq = st.den_sq;
  T* dir = st.dir;
  const uint8_t* decay = st.decay;
#pragma omp parallel for schedule(static)
  for (size_t j = 0; j < k; ++j) {
    const size_t i = idx[j];
    const int64_t a = last[i] < 0 ? 1 : std::max<int64_t>(1, t - int64_t(last[i]));
    const IndexedMove<T> mv = indexed_move(m[i], g[j], a, c, hp);
    m[i] = mv.m;
    T den = mv.den;
    if (den_sq) {
      if (frozen && den_sq[i] > 0)
        den = std::sqrt(T(den_sq[i]));
      else if (!frozen)
        den_sq[i] =
            den_sq[i] == 0 ? float(den * den) : float(b2 * den_sq[i] + (T(1) - b2) * den * den);
    }
    const T keep = !decay[i] ? T(1)
                   : !lazy_decay || a == 1
                       ? decay_factor
                       : static_cast<T>(std::pow(double(decay_factor), double(a)));
    T& p = param[pidx[j]];
    p = p * keep - step * (mv.num * inv_c) / den;
    if (dir) dir[pidx[j]] = (mv.m * inv_c) / den;
    last[i] = float(t);
  }
}

template <class T>
void adams_update_from_momentum(T* param, const uint32_t* pidx, T* m_last, float* last,
                                const uint32_t* idx, const T* m_now, const uint8_t* decay, size_t k,
                                const AdamStep& hp) {
  const AdamsConstants<T> c(hp);
  // Locals, not hp.* in the loop: the stores to param/last could alias hp for the compiler.
  const int64_t t = hp.t;
  const float beta1 = hp.beta1;
  const int catch_up_max = hp.catch_up_max;
  const T b1 = c.b1, b2 = c.b2, inv_c = c.inv_c, decay_factor = c.decay, e = c.eps, step = c.lr;
#pragma omp parallel for schedule(static)
  for (size_t j = 0; j < k; ++j) {
    const size_t i = idx[j];
    const int64_t a = std::max<int64_t>(1, t - int64_t(last[i]));
    const T b1a = a == 1 ? b1 : static_cast<T>(std::pow(double(beta1), double(a)));
    const T mt = m_now[j];
    const T gbar = (mt - b1a * m_last[i]) / (T(1) - b1a);
    const T prev = (mt - (T(1) - b1) * gbar) / b1 * inv_c;
    const T den = std::sqrt(b2 * prev * prev + (T(1) - b2) * gbar * gbar) + e;
    const int64_t s = std::min<int64_t>(a, std::max(1, catch_up_max));
    const T keep = !decay[i] ? T(1)
                   : s == 1  ? decay_factor
                             : static_cast<T>(std::pow(double(decay_factor), double(s)));
    T& p = param[pidx[j]];
    p = p * keep - T(s) * step * (mt * inv_c) / den;
    m_last[i] = mt;
    last[i] = float(t);
  }
}

template void adams_update_from_momentum<float>(float*, const uint32_t*, float*, float*,
                                                const uint32_t*, const float*, const uint8_t*,
                                                size_t, const AdamStep&);
template void adams_update_from_momentum<double>(double*, const uint32_t*, double*, float*,
                                                 const uint32_t*, const double*, const uint8_t*,
                                                 size_t, const AdamStep&);

template void adams_update_indexed<float>(float*, const uint32_t*, const uint32_t*, const float*,
                                          size_t, const IndexedAdamsState<float>&, const AdamStep&);
template void adams_update_indexed<double>(double*, const uint32_t*, const uint32_t*, const double*,
                                           size_t, const IndexedAdamsState<double>&,
                                           const AdamStep&);

template void adams_update<float>(float*, const float*, float*, size_t, const AdamStep&);
template void adams_update<double>(double*, const double*, double*, size_t, const AdamStep&);

}  // namespace gossamer::kernels::cpu
