// GASLoC and gossip (see gasloc.h): the outer update of a round and the mixing with peers.
#include "optim/gasloc.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "optim/gossip_topology.h"

namespace gossamer::optim {

std::unique_ptr<Optimizer> make_gasloc(const OptimizerSetup& setup) {
  const GaslocConfig& c = setup.config.gasloc;
  const OuterUpdate outer = c.mode == GaslocMode::GASLOC_MODE_MIXED_NESTEROV
                                ? OuterUpdate::OUTER_MIXED_NESTEROV
                                : OuterUpdate::OUTER_ZIJ_LITERAL;
  return std::make_unique<Gasloc>(setup, "gasloc", c.local_steps, "optimizer.gasloc.local_steps", c,
                                  outer, c.outer_lr, c.outer_momentum);
}

std::unique_ptr<Optimizer> make_gossip(const OptimizerSetup& setup) {
  const GossipConfig& c = setup.config.gossip;
  return std::make_unique<Gasloc>(setup, "gossip", c.local_steps, "optimizer.gossip.local_steps", c,
                                  OuterUpdate::OUTER_NONE, 1.0, 0.0);
}

Gasloc::Gasloc(const OptimizerSetup& setup, const char* name, const LocalSteps& steps,
               const std::string& steps_key, const GossipGraph& graph, OuterUpdate outer,
               double outer_lr, double outer_momentum)
    : LocalRounds(setup, name, steps, steps_key),
      topology_(graph.topology),
      alpha_(gossip_weight(graph.topology, world_, graph.gossip_weight)),
      outer_(outer),
      outer_lr_(outer_lr),
      outer_momentum_(outer_momentum) {
  const int degree = max_in_degree(topology_, world_);
  GOSSAMER_CHECK(degree == 0 || alpha_ * degree <= 1.0,
                 "optimizer.%s.gossip_weight: %g x the %s topology's degree %d at %d ranks "
                 "exceeds 1 (a rank's own weight would be negative); use at most %g, or 0",
                 name, alpha_, std::string(enum_name(topology_)).c_str(), degree, world_,
                 1.0 / degree);
  exact_average_ = topology_ == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE &&
                   (graph.gossip_weight == 0 || alpha_ * world_ == 1.0);
  if (outer_ != OuterUpdate::OUTER_NONE) {
    anchor_ = HostBuffer<float>(total_);
    momentum_ = HostBuffer<float>(total_);
    std::fill_n(momentum_.data(), total_, 0.0f);
  }
  const int buffers = topology_ == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE ? 1 : degree;
  for (int i = 0; i < buffers && world_ > 1; ++i) received_.emplace_back(total_);
}

Replicas Gasloc::replicas() const {
  return topology_ == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE && exact_average_ &&
                 outer_ != OuterUpdate::OUTER_ZIJ_LITERAL
             ? Replicas::REPLICAS_IDENTICAL_AT_ROUND_END
             : Replicas::REPLICAS_INDEPENDENT;
}

bool Gasloc::replicas_identical_now() const {
  return replicas() == Replicas::REPLICAS_IDENTICAL_AT_ROUND_END &&
         (last_ended_round_ || last_t_ == 0);
}

void Gasloc::on_attach() {
  LocalRounds::on_attach();
  if (!loaded_ && outer_ != OuterUpdate::OUTER_NONE)
    std::memcpy(anchor_.data(), params_.data(), total_ * sizeof(float));
}

void Gasloc::end_round(int64_t round) {
  float* x = params_.data();
  const size_t n = total_;
  if (outer_ == OuterUpdate::OUTER_MIXED_NESTEROV && exact_average_ && world_ > 1) {
    // The complete graph with exact averaging: the mean of the z_i depends on the ranks' momenta
    // only through their mean, so the ranks keep that mean and average the pseudo-gradients
    // first, in DiLoCo's order of operations: bit-identical to diloco. This needs the anchors
    // identical on every rank, which the complete graph keeps once the ranks start alike (a
    // fresh run, --init-from, or a checkpoint of such a run).
    nesterov_on_mean(anchor_.data(), momentum_.data(), received_[0].data(), outer_lr_,
                     outer_momentum_);
    last_degree_ = world_ - 1;
    last_peers_.clear();
    return;
  }
  if (outer_ == OuterUpdate::OUTER_MIXED_NESTEROV) {  // x <- z, this rank's outer step
    float* a = anchor_.data();
    float* m = momentum_.data();
    const float lr = float(outer_lr_), mu = float(outer_momentum_);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) {
      const float delta = a[i] - x[i];
      m[i] = mu * m[i] + delta;
      x[i] = a[i] - lr * (delta + mu * m[i]);
    }
    mix(round, nullptr);
  } else if (outer_ == OuterUpdate::OUTER_ZIJ_LITERAL) {  // x <- y = a + lr (x - a)
    const float* a = anchor_.data();
    const float lr = float(outer_lr_);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) x[i] = a[i] + lr * (x[i] - a[i]);
    mix(round, momentum_.data());
  } else {
    mix(round, nullptr);
  }
  if (outer_ != OuterUpdate::OUTER_NONE) std::memcpy(anchor_.data(), x, n * sizeof(float));
}

void Gasloc::mix(int64_t round, float* y_prev) {
  float* x = params_.data();
  const size_t n = total_;
  const float alpha = float(alpha_);
  // zij_literal: + gamma (y - y_prev), from the second round on (round is 1-based).
  const float gamma = y_prev != nullptr && round > 1 ? float(outer_momentum_) : 0.0f;
  last_peers_.clear();
  if (world_ == 1) {
    last_degree_ = 0;
  } else if (topology_ == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE) {
    float* sum = received_[0].data();
    std::memcpy(sum, x, n * sizeof(float));
    comm_.all_reduce(sum, n, comm::DType::F32, comm::ReduceOp::SUM).wait();
    last_degree_ = world_ - 1;
    if (exact_average_ && y_prev == nullptr) {  // the mean, as DiLoCo averages
      ops_.scale(sum, float(1.0 / world_), n);
      std::memcpy(x, sum, n * sizeof(float));
      return;
    }
    const float own = exact_average_ ? 0.0f : float(1.0 - alpha_ * world_);
    const float w = exact_average_ ? float(1.0 / world_) : alpha;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) {
      const float y = x[i];
      x[i] = own * y + w * sum[i] + gamma * (y - (y_prev ? y_prev[i] : y));
      if (y_prev) y_prev[i] = y;
    }
    return;
  } else {
    // Every exchange of the round at once: a late peer delays only the exchanges with it.
    std::vector<int> dests, sources;
    std::vector<void*> into;
    for (const GossipExchange& e : round_exchanges(topology_, world_, rank_, seed_, round)) {
      dests.push_back(e.send_to);
      sources.push_back(e.recv_from);
      into.push_back(received_[into.size()].data());
    }
    if (!dests.empty()) comm_.sendrecv_many(x, n, dests, into, sources, comm::DType::F32).wait();
    last_peers_ = sources;
    last_degree_ = int(sources.size());
  }
  const int degree = last_degree_;
  const float own = float(1.0 - alpha_ * degree);
  std::vector<const float*> in;
  for (int e = 0; e < degree; ++e) in.push_back(received_[size_t(e)].data());
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) {
    const float y = x[i];
    float acc = own * y;
    for (int e = 0; e < degree; ++e) acc += alpha * in[size_t(e)][i];
    if (y_prev) {
      acc += gamma * (y - y_prev[i]);
      y_prev[i] = y;
    }
    x[i] = acc;
  }
}

std::vector<StateTensor> Gasloc::outer_state() {
  if (outer_ == OuterUpdate::OUTER_NONE) return {};
  const char* second =
      outer_ == OuterUpdate::OUTER_MIXED_NESTEROV ? "gasloc.momentum" : "gasloc.y_prev";
  return {StateTensor::per_rank("gasloc.anchor", anchor_.data(), total_),
          StateTensor::per_rank(second, momentum_.data(), total_)};
}

size_t Gasloc::state_bytes() const {
  return LocalRounds::state_bytes() + (anchor_.size() + momentum_.size()) * sizeof(float);
}

void Gasloc::round_metrics(std::vector<std::pair<std::string, double>>& out) const {
  out.emplace_back("degree", double(last_degree_));
  for (size_t i = 0; i < last_peers_.size(); ++i)
    out.emplace_back("peer" + std::to_string(i), double(last_peers_[i]));
}

bool Gasloc::evaluation_weights(std::span<float> out) {
  average_replicas(out);
  return true;
}

}  // namespace gossamer::optim
