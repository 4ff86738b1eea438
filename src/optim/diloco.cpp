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
      anchor_(total_, *ops_.memory),
      momentum_(total_, *ops_.memory),  // zero-filled
      delta_(total_, *ops_.memory) {}

void Diloco::on_attach() {
  LocalRounds::on_attach();
  // A fresh run starts every replica and the anchor from the same weights.
  if (!loaded_) ops_.memory->copy(anchor_.data(), params_.data(), total_ * sizeof(float));
}

void Diloco::end_round(int64_t /*round*/) {
  nesterov_on_mean(anchor_.data(), momentum_.data(), delta_.data(), outer_lr_, outer_momentum_);
}

std::vector<StateTensor> Diloco::outer_state() {
  return {StateTensor::per_rank("diloco.anchor", anchor_.data(), total_).in(*ops_.memory),
          StateTensor::per_rank("diloco.momentum", momentum_.data(), total_).in(*ops_.memory)};
}

size_t Diloco::state_bytes() const {
  return LocalRounds::state_bytes() + 2 * total_ * sizeof(float);
}

bool Diloco::evaluation_weights(std::span<float> out) {
  GOSSAMER_CHECK(out.size() == total_, "diloco: evaluation buffer of %zu, layout %zu", out.size(),
                 total_);
  ops_.memory->download(out.data(), anchor_.data(), total_ * sizeof(float));
  return true;
}

}  // namespace gossamer::optim
