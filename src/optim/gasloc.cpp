// GASLoC and gossip (see gasloc.h): the outer update of a round and the mixing with peers.
#include "optim/gasloc.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "optim/gossip_topology.h"

namespace gossamer::optim {

std::unique_ptr<Optimizer> make_gasloc(const OptimizerSetup& setup) {
  const GaslocConfig& c = setup.config.gasloc;
  OuterUpdate outer = OuterUpdate::OUTER_ACCELERATED;
  if (c.mode == GaslocMode::GASLOC_MODE_MIXED_NESTEROV) outer = OuterUpdate::OUTER_MIXED_NESTEROV;
  if (c.mode == GaslocMode::GASLOC_MODE_ZIJ_LITERAL) outer = OuterUpdate::OUTER_ZIJ_LITERAL;
  return std::make_unique<Gasloc>(setup, "gasloc", c.local_steps, "optimizer.gasloc.local_steps", c,
                                  outer, c.outer_lr, c.outer_momentum, c.complete_fast_path);
}

std::unique_ptr<Optimizer> make_gossip(const OptimizerSetup& setup) {
  const GossipConfig& c = setup.config.gossip;
  return std::make_unique<Gasloc>(setup, "gossip", c.local_steps, "optimizer.gossip.local_steps", c,
                                  OuterUpdate::OUTER_NONE, 1.0, 0.0);
}

Gasloc::Gasloc(const OptimizerSetup& setup, const char* name, const LocalSteps& steps,
               const std::string& steps_key, const GossipGraph& graph, OuterUpdate outer,
               double outer_lr, double outer_momentum, bool complete_fast_path)
    : LocalRounds(setup, name, steps, steps_key),
      topology_(graph.topology),
      alpha_(gossip_weight(graph.topology, world_, graph.gossip_weight)),
      outer_(outer),
      outer_lr_(outer_lr),
      outer_momentum_(outer_momentum),
      mix_momentum_(graph.mix_momentum) {
  const int degree = max_in_degree(topology_, world_);
  GOSSAMER_CHECK(degree == 0 || alpha_ * degree <= 1.0,
                 "optimizer.%s.gossip_weight: %g x the %s topology's degree %d at %d ranks "
                 "exceeds 1 (a rank's own weight would be negative); use at most %g, or 0",
                 name, alpha_, std::string(enum_name(topology_)).c_str(), degree, world_,
                 1.0 / degree);
  exact_average_ = topology_ == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE &&
                   (graph.gossip_weight == 0 || alpha_ * world_ == 1.0);
  fast_path_ = complete_fast_path && exact_average_ && mix_momentum_ == 0 &&
               outer_ == OuterUpdate::OUTER_MIXED_NESTEROV;
  const MemoryOps& memory = *ops_.memory;
  if (outer_ != OuterUpdate::OUTER_NONE) {
    anchor_ = Buffer<float>(total_, memory);
    momentum_ = Buffer<float>(total_, memory);  // zero-filled
  }
  scratch_ = Buffer<float>(total_, memory);
  if (mix_momentum_ > 0) correction_ = Buffer<float>(total_, memory);  // zero-filled
  log_info("%s: %s mixing%s", name, std::string(enum_name(topology_)).c_str(),
           mix_momentum_ > 0
               ? strprintf(" with momentum %g on the disagreement", mix_momentum_).c_str()
               : "");
  const int buffers = topology_ == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE ? 1 : degree;
  for (int i = 0; i < buffers && world_ > 1; ++i) received_.emplace_back(total_, memory);
}

Replicas Gasloc::replicas() const {
  return topology_ == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE && exact_average_ &&
                 mix_momentum_ == 0 && outer_ != OuterUpdate::OUTER_ZIJ_LITERAL
             ? Replicas::REPLICAS_IDENTICAL_AT_ROUND_END
             : Replicas::REPLICAS_INDEPENDENT;
}

bool Gasloc::replicas_identical_now() const {
  return replicas() == Replicas::REPLICAS_IDENTICAL_AT_ROUND_END &&
         (last_ended_round_ || last_t_ == 0);
}

void Gasloc::on_attach() {
  LocalRounds::on_attach();
  if (loaded_ || outer_ == OuterUpdate::OUTER_NONE) return;
  const size_t bytes = total_ * sizeof(float);
  ops_.memory->copy(anchor_.data(), params_.data(), bytes);
  // y_prev before round 1: the first weights (a trajectory at rest).
  if (outer_ != OuterUpdate::OUTER_MIXED_NESTEROV)
    ops_.memory->copy(momentum_.data(), params_.data(), bytes);
}

void Gasloc::end_round(int64_t round) {
  float* x = params_.data();
  const size_t n = total_;
  if (fast_path_ && world_ > 1) {
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
  const size_t bytes = n * sizeof(float);
  if (outer_ == OuterUpdate::OUTER_ACCELERATED) {  // x <- (1 + gamma) y - gamma y_prev, mixed
    float* y = scratch_.data();
    float* y_prev = momentum_.data();
    ops_.memory->copy(y, anchor_.data(), bytes);
    ops_.axpy(x, -1.0f, anchor_.data(), n);  // x - a
    ops_.axpy(y, float(outer_lr_), x, n);    // y = a + lr (x - a)
    ops_.axpy(y_prev, -1.0f, y, n);          // y_prev - y
    ops_.memory->copy(x, y, bytes);
    ops_.axpy(x, -float(outer_momentum_), y_prev, n);  // y + gamma (y - y_prev)
    ops_.memory->copy(y_prev, y, bytes);               // the next round's y_prev
    mix(round, nullptr);
  } else if (outer_ == OuterUpdate::OUTER_MIXED_NESTEROV) {  // x <- z, this rank's outer step
    float* delta = scratch_.data();
    ops_.memory->copy(delta, anchor_.data(), bytes);
    ops_.axpy(delta, -1.0f, x, n);  // anchor - x, exactly
    // The anchor becomes z (it is replaced by the mix below).
    ops_.nesterov_outer(anchor_.data(), momentum_.data(), delta, float(outer_lr_),
                        float(outer_momentum_), n);
    ops_.memory->copy(x, anchor_.data(), bytes);
    mix(round, nullptr);
  } else if (outer_ == OuterUpdate::OUTER_ZIJ_LITERAL) {  // x <- y = a + lr (x - a)
    float* y = scratch_.data();
    ops_.axpy(x, -1.0f, anchor_.data(), n);  // x - a
    ops_.memory->copy(y, anchor_.data(), bytes);
    ops_.axpy(y, float(outer_lr_), x, n);  // one rounding after the product where contracted
    ops_.memory->copy(x, y, bytes);
    mix(round, momentum_.data());
  } else {
    mix(round, nullptr);
  }
  if (outer_ != OuterUpdate::OUTER_NONE) ops_.memory->copy(anchor_.data(), x, bytes);
}

void Gasloc::combine(float own, float w, const std::vector<const float*>& in, float* y_prev,
                     float gamma) {
  float* x = params_.data();
  float* acc = scratch_.data();
  const size_t n = total_, bytes = n * sizeof(float);
  ops_.memory->copy(acc, x, bytes);
  ops_.scale(acc, own, n);
  for (const float* v : in) ops_.axpy(acc, w, v, n);
  if (y_prev) {
    ops_.axpy(y_prev, -1.0f, x, n);       // y_prev - x
    ops_.axpy(acc, -gamma, y_prev, n);    // + gamma (x - y_prev)
    ops_.memory->copy(y_prev, x, bytes);  // this round's y for the next
  }
  if (mix_momentum_ > 0) {  // x <- W z + beta (W z - z + c), c <- x - z (z: x before the mix)
    float* c = correction_.data();
    ops_.axpy(c, 1.0f, acc, n);
    ops_.axpy(c, -1.0f, x, n);  // c + W z - z
    ops_.axpy(acc, float(mix_momentum_), c, n);
    ops_.memory->copy(c, acc, bytes);
    ops_.axpy(c, -1.0f, x, n);
  }
  ops_.memory->copy(x, acc, bytes);
}

void Gasloc::mix(int64_t round, float* y_prev) {
  float* x = params_.data();
  const size_t n = total_;
  const float alpha = float(alpha_);
  // zij_literal: + gamma (y - y_prev), y_prev the first weights in round 1.
  const float gamma = y_prev != nullptr ? float(outer_momentum_) : 0.0f;
  last_peers_.clear();
  if (world_ == 1) {
    last_degree_ = 0;
  } else if (topology_ == GossipTopology::GOSSIP_TOPOLOGY_COMPLETE) {
    float* sum = received_[0].data();
    ops_.memory->copy(sum, x, n * sizeof(float));
    comm_.all_reduce(sum, n, comm::DType::F32, comm::ReduceOp::SUM).wait();
    last_degree_ = world_ - 1;
    if (exact_average_ && y_prev == nullptr && mix_momentum_ == 0) {  // the mean, as DiLoCo
      ops_.scale(sum, float(1.0 / world_), n);
      ops_.memory->copy(x, sum, n * sizeof(float));
      return;
    }
    const float own = exact_average_ ? 0.0f : float(1.0 - alpha_ * world_);
    const float w = exact_average_ ? float(1.0 / world_) : alpha;
    combine(own, w, {sum}, y_prev, gamma);
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
  std::vector<const float*> in;
  for (int e = 0; e < degree; ++e) in.push_back(received_[size_t(e)].data());
  combine(float(1.0 - alpha_ * degree), alpha, in, y_prev, gamma);
}

std::vector<StateTensor> Gasloc::outer_state() {
  std::vector<StateTensor> out;
  if (outer_ != OuterUpdate::OUTER_NONE) {
    const char* second =
        outer_ == OuterUpdate::OUTER_MIXED_NESTEROV ? "gasloc.momentum" : "gasloc.y_prev";
    out.push_back(StateTensor::per_rank("gasloc.anchor", anchor_.data(), total_).in(*ops_.memory));
    out.push_back(StateTensor::per_rank(second, momentum_.data(), total_).in(*ops_.memory));
  }
  if (mix_momentum_ > 0)
    out.push_back(
        StateTensor::per_rank(std::string(name()) + ".correction", correction_.data(), total_)
            .in(*ops_.memory));
  return out;
}

size_t Gasloc::state_bytes() const {
  return LocalRounds::state_bytes() +
         (anchor_.size() + momentum_.size() + correction_.size()) * sizeof(float);
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
