// GASLoC (Cagnasso, Belilovsky, Oyallon, arXiv 2606.11081; ALGORITHMS.md 5.2, docs/GASLOC.md)
// and gossip averaging (the D-PSGD-style baseline). Both take rounds of local AdamW steps
// (local_rounds.h), then mix with the round's peers (gossip_topology.h) instead of an
// all-reduce: x_i <- (1 - deg_i alpha) x_i + alpha sum_j x_j over the vectors received. With
// y_i = anchor_i + lr_out (x_i - anchor_i) and y_prev_i the previous round's y_i (before round
// 1: the first anchor, so that round 1 already carries momentum, as heavy ball from rest does):
//   gasloc accelerated (default): x_i <- mix((1 + gamma) y - gamma y_prev)_i; y_prev_i <- y_i;
//       anchor_i <- x_i. The momentum goes through the mixing, which accelerates consensus; on
//       the complete graph with exact averaging this is DiLoCo's Nesterov step (docs/GASLOC.md
//       derives it), through the general path.
//   gasloc zij_literal: x_i <- mix(y)_i + gamma (y_i - y_prev_i); y_prev_i <- y_i.
//   gasloc mixed_nesterov: delta_i = anchor_i - x_i; m_i <- mu m_i + delta_i;
//       z_i = anchor_i - lr_out (delta_i + mu m_i); x_i <- mix(z)_i; anchor_i <- x_i: plain
//       gossip after a per-rank Nesterov step (on the complete graph with exact averaging and
//       complete_fast_path the ranks keep the mean momentum and run DiLoCo's round,
//       bit-identical to diloco).
//   gossip: x_i <- mix(x)_i (no anchor, no outer state).
// With mix_momentum beta > 0 (gossip, mixed_nesterov), mix(z)_i becomes W z_i + beta (W z_i -
// z_i + c_i) and c_i <- x_i - z_i (0 before round 1): heavy-ball momentum on the disagreement
// only; the c_i sum to zero, so the mean over ranks is W's, untouched (docs/GASLOC.md).
// Only the matched peers wait for each other: a round issues sendrecv calls only (the complete
// graph: one all-reduce). Invariant: every rank's outer state is its own (per-rank scope);
// evaluation and model.safetensors see the average of the replicas.
#pragma once

#include <memory>
#include <vector>

#include "core/buffer.h"
#include "optim/local_rounds.h"

namespace gossamer::optim {

std::unique_ptr<Optimizer> make_gasloc(const OptimizerSetup& setup);
std::unique_ptr<Optimizer> make_gossip(const OptimizerSetup& setup);

enum class OuterUpdate { OUTER_ACCELERATED, OUTER_MIXED_NESTEROV, OUTER_ZIJ_LITERAL, OUTER_NONE };

class Gasloc final : public LocalRounds {
 public:
  // gossip: OUTER_NONE with the optimizer.gossip section; gasloc: its mode.
  Gasloc(const OptimizerSetup& setup, const char* name, const LocalSteps& steps,
         const std::string& steps_key, const GossipGraph& graph, OuterUpdate outer, double outer_lr,
         double outer_momentum, bool complete_fast_path = false);

  // The complete graph with exact averaging: accelerated's and mixed_nesterov's replicas are
  // then identical at round ends (DiLoCo); otherwise they never are.
  Replicas replicas() const override;
  bool replicas_identical_now() const override;
  size_t state_bytes() const override;
  bool evaluation_weights(std::span<float> out) override;

 private:
  void on_attach() override;
  void end_round(int64_t round) override;
  std::vector<StateTensor> outer_state() override;
  float* average_scratch() override { return scratch_.data(); }  // free between rounds
  void round_metrics(std::vector<std::pair<std::string, double>>& out) const override;
  // Replaces params_ (this rank's vector to mix) by its mix with the round's peers; `keep`,
  // when given, receives the vector before mixing (zij_literal's y).
  void mix(int64_t round, float* keep);
  // x <- own x + w sum_e in[e] + gamma (x - y_prev), y_prev <- x (when given), through ops;
  // then mix_momentum's term and correction.
  void combine(float own, float w, const std::vector<const float*>& in, float* y_prev, float gamma);

  GossipTopology topology_;
  double alpha_;
  OuterUpdate outer_;
  double outer_lr_, outer_momentum_, mix_momentum_;
  bool exact_average_;  // complete graph with alpha = 1 / world: the mean, as DiLoCo computes it
  bool fast_path_;      // mixed_nesterov with exact_average_ and complete_fast_path
  // In the op table's memory. momentum: m (mixed_nesterov) or y_prev (accelerated,
  // zij_literal); scratch: the pseudo-gradient or y, then the mix being summed.
  Buffer<float> anchor_, momentum_, scratch_;
  Buffer<float> correction_;             // c, with mix_momentum > 0 only
  std::vector<Buffer<float>> received_;  // one per exchange of the largest round
  int last_degree_ = 0;
  std::vector<int> last_peers_;
};

}  // namespace gossamer::optim
