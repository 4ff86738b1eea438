// DiLoCo (see diloco.h): the outer round.
#include "optim/diloco.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace gossamer::optim {

std::unique_ptr<Optimizer> make_diloco(const OptimizerSetup& setup) {
  return std::make_unique<Diloco>(setup);
}

Diloco::Diloco(const OptimizerSetup& setup)
    : LocalRounds(setup, "diloco", setup.config.diloco.local_steps, "optimizer.diloco.local_steps"),
      outer_lr_(setup.config.diloco.outer_lr),
      outer_momentum_(setup.config.diloco.outer_momentum),
      anchor_(total_),
      momentum_(total_),
      delta_(total_) {
  std::fill_n(momentum_.data(), total_, 0.0f);
}

void Diloco::on_attach() {
  LocalRounds::on_attach();
  // A fresh run starts every replica and the anchor from the same weights.
  if (!loaded_) std::memcpy(anchor_.data(), params_.data(), total_ * sizeof(float));
}

void Diloco::end_round(int64_t /*round*/) {
  float* theta = params_.data();
  float* anchor = anchor_.data();
  float* m = momentum_.data();
  float* delta = delta_.data();
  const size_t n = total_;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) delta[i] = anchor[i] - theta[i];
  if (world_ > 1) {
    comm_.all_reduce(delta, n, comm::DType::F32, comm::ReduceOp::SUM).wait();
    ops_.scale(delta, float(1.0 / world_), n);
  }
  const float lr = float(outer_lr_), mu = float(outer_momentum_);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) {
    m[i] = mu * m[i] + delta[i];
    anchor[i] -= lr * (delta[i] + mu * m[i]);
    theta[i] = anchor[i];
  }
}

std::vector<StateTensor> Diloco::outer_state() {
  return {StateTensor::per_rank("diloco.anchor", anchor_.data(), total_),
          StateTensor::per_rank("diloco.momentum", momentum_.data(), total_)};
}

size_t Diloco::state_bytes() const {
  return LocalRounds::state_bytes() + 2 * total_ * sizeof(float);
}

bool Diloco::evaluation_weights(std::span<float> out) {
  GOSSAMER_CHECK(out.size() == total_, "diloco: evaluation buffer of %zu, layout %zu", out.size(),
                 total_);
  std::memcpy(out.data(), anchor_.data(), total_ * sizeof(float));
  return true;
}

}  // namespace gossamer::optim
