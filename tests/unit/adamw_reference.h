// The inner AdamW step of the local-step methods (optim/local_adamw.h) as its kernel writes it,
// with weight decay 0 and no clipping, in double: for tests that compute expected weights by
// hand. At the rank's own step count s: m <- b1 m + (1 - b1) g, v <- b2 v + (1 - b2) g^2,
// x <- x - lr (m / (1 - b1^s)) / (sqrt(v / (1 - b2^s)) + eps). Test code; header-only.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gossamer::testing {

struct AdamwConstants {
  double lr, beta1, beta2, eps;
};

// grad(i): the gradient of element i at this step.
template <class Grad>
void adamw_reference_step(std::vector<double>& x, std::vector<double>& m, std::vector<double>& v,
                          int64_t s, const AdamwConstants& k, const Grad& grad) {
  const double bc1 = 1 - std::pow(k.beta1, double(s)), bc2 = 1 - std::pow(k.beta2, double(s));
  for (size_t i = 0; i < x.size(); ++i) {
    const double g = grad(i);
    m[i] = k.beta1 * m[i] + (1 - k.beta1) * g;
    v[i] = k.beta2 * v[i] + (1 - k.beta2) * g * g;
    x[i] -= k.lr * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + k.eps);
  }
}

}  // namespace gossamer::testing
