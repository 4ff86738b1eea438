// Validation of the local-step methods' sections (see local_steps_config.h). The per-rank list's
// length is checked against the world size when the optimizer is built (local_rounds.cpp).
#include "optim/local_steps_config.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::optim {

int64_t LocalSteps::max() const {
  int64_t m = 0;
  for (int64_t v : values) m = std::max(m, v);
  return m;
}

namespace {

void validate_steps(const LocalSteps& steps, const std::string& key) {
  GOSSAMER_CHECK(!steps.values.empty(), "%s: empty", key.c_str());
  for (size_t i = 0; i < steps.values.size(); ++i) {
    if (steps.values[i] >= 1) continue;
    const std::string where = steps.per_rank() ? strprintf("%s[%zu]", key.c_str(), i) : key;
    fail("%s: must be >= 1 (inner steps per round), found %lld", where.c_str(),
         (long long)steps.values[i]);
  }
}

void validate_outer(double lr, double momentum, const std::string& p) {
  GOSSAMER_CHECK(lr > 0, "%souter_lr: must be > 0, found %g", p.c_str(), lr);
  GOSSAMER_CHECK(momentum >= 0 && momentum < 1, "%souter_momentum: must lie in [0, 1), found %g",
                 p.c_str(), momentum);
}

}  // namespace

void DilocoConfig::validate(const std::string& p) const {
  validate_steps(local_steps, p + "local_steps");
  validate_outer(outer_lr, outer_momentum, p);
}

void GossipGraph::validate_graph(const std::string& p) const {
  GOSSAMER_CHECK(gossip_weight >= 0 && gossip_weight <= 1,
                 "%sgossip_weight: must lie in [0, 1] (0: 1 / (degree + 1)), found %g", p.c_str(),
                 gossip_weight);
  GOSSAMER_CHECK(mix_momentum >= 0 && mix_momentum < 1,
                 "%smix_momentum: must lie in [0, 1), found %g", p.c_str(), mix_momentum);
}

void GaslocConfig::validate(const std::string& p) const {
  validate_steps(local_steps, p + "local_steps");
  validate_graph(p);
  validate_outer(outer_lr, outer_momentum, p);
  GOSSAMER_CHECK(mix_momentum == 0 || mode == GaslocMode::GASLOC_MODE_MIXED_NESTEROV,
                 "%smix_momentum: applies to mode mixed_nesterov only (accelerated and "
                 "zij_literal carry their momentum in outer_momentum), found %g with mode %s",
                 p.c_str(), mix_momentum, std::string(enum_name(mode)).c_str());
}

void GossipConfig::validate(const std::string& p) const {
  validate_steps(local_steps, p + "local_steps");
  validate_graph(p);
}

}  // namespace gossamer::optim
