// TrainingRun's evaluations and samples (see training_run.h): the validation loss on the
// evaluation weights, each replica's loss and the consensus distance when the replicas differ,
// the agreed signal when a signal abandons an evaluation, and text samples on rank 0.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <functional>
#include <optional>
#include <vector>

#include "comm/gather_values.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "eval/evaluate.h"
#include "eval/sampler.h"
#include "model/host_params.h"
#include "train/interrupt.h"
#include "train/training_run.h"

#include "comm/sim_clock.h"

namespace gossamer::train {

// Here and in evaluate_replicas() the parameters are read on the host: only methods whose
// replicas differ get here, and none of them runs on device memory yet
// (Optimizer::supports_device_memory(), checked at start-up).
void TrainingRun::with_evaluation_weights(const std::function<void()>& fn) {
  const bool swap =
      evaluation_weights_.size() > 0 && optimizer_->evaluation_weights(evaluation_weights_.span());
  // In place on host memory; on device memory through a read-back and an upload.
  const auto exchange = [this] {
    model::HostParamsEdit params(*model_, /*read_first=*/true);
    std::swap_ranges(params.span().begin(), params.span().end(), evaluation_weights_.data());
    params.commit();
  };
  if (swap) exchange();
  try {
    fn();
  } catch (...) {
    if (swap) exchange();
    throw;
  }
  if (swap) exchange();
}

std::optional<ReplicaEval> TrainingRun::evaluate_replicas() {
  if (!inputs_.val || world_ == 1 ||
      optimizer_->replicas() == optim::Replicas::REPLICAS_IDENTICAL_EVERY_STEP ||
      optimizer_->replicas_identical_now() || state_.step == 0)
    return std::nullopt;
  // This rank's replica alone: by default on the windows the ranks share out for the average's
  // loss, or on train.eval_replica_batches micro-batches.
  const int64_t batches =
      tc_.eval_replica_batches > 0 ? tc_.eval_replica_batches : tc_.eval_batches * world_;
  const eval::EvalResult own = eval::evaluate(*model_, *inputs_.val, B_, batches, tokens_.data(),
                                              targets_.data(), nullptr, interrupt_requested);
  const model::HostParamsView replica(*model_);  // read back from device memory
  std::span<const float> x = replica.span();
  float* mean = evaluation_weights_.data();  // scratch until the evaluation weights are written
  std::copy(x.begin(), x.end(), mean);
  comm_.all_reduce(mean, x.size(), comm::DType::F32, comm::ReduceOp::SUM).wait();
  kernels::cpu_ops().scale(mean, float(1.0 / world_), x.size());  // host memory
  double d2 = 0, m2 = 0;
#pragma omp parallel for reduction(+ : d2, m2) schedule(static)
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(x[i]) - double(mean[i]);
    d2 += d * d;
    m2 += double(mean[i]) * double(mean[i]);
  }
  const double mine[4] = {own.loss, std::sqrt(d2), std::sqrt(m2), own.stopped ? 1.0 : 0.0};
  const std::vector<double> all = comm::all_gather_doubles(comm_, mine);
  ReplicaEval r;
  r.tokens = own.tokens;
  for (int k = 0; k < world_; ++k) {
    r.val_loss.push_back(all[size_t(4 * k)]);
    r.consensus_distance += all[size_t(4 * k + 1)] / world_;
    r.stopped = r.stopped || all[size_t(4 * k + 3)] != 0.0;
  }
  r.consensus_relative = mine[2] > 0 ? r.consensus_distance / mine[2] : 0.0;
  return r;
}

bool TrainingRun::evaluate_at(int64_t step, const std::optional<ReplicaEval>& replicas) {
  if (!inputs_.val) return true;
  Stopwatch w;
  const eval::EvalResult r =
      eval::evaluate(*model_, *inputs_.val, B_, tc_.eval_batches, tokens_.data(), targets_.data(),
                     &comm_, interrupt_requested);
  if (r.stopped) {
    log_warn("step %lld | evaluation abandoned after %.1f s: a signal was received",
             (long long)step, w.seconds());
    return false;
  }
  log_info("step %lld | val loss %.4f | %lld tokens | %.1f s", (long long)step, r.loss,
           (long long)r.tokens, w.seconds());
  json line = {{"step", step}, {"val_loss", r.loss}, {"val_tokens", r.tokens}};
  if (comm::SimClock* sim = comm_.sim_clock()) line["sim_time"] = sim->now();
  if (replicas) {
    const auto [lo, hi] = std::minmax_element(replicas->val_loss.begin(), replicas->val_loss.end());
    log_info(
        "step %lld | val loss of the replicas %.4f to %.4f | consensus distance %.4g (%.3g "
        "relative)",
        (long long)step, *lo, *hi, replicas->consensus_distance, replicas->consensus_relative);
    line["val_loss_replicas"] = replicas->val_loss;
    line["val_tokens_replica"] = replicas->tokens;
    line["optim"] = {{"consensus_distance", replicas->consensus_distance},
                     {"consensus_distance_relative", replicas->consensus_relative}};
  }
  if (metrics_) metrics_->write(line);
  return true;
}

bool TrainingRun::evaluate_and_sample(bool eval, bool samples) {
  const std::optional<ReplicaEval> replicas = eval ? evaluate_replicas() : std::nullopt;
  if (replicas && replicas->stopped) {
    log_warn("step %lld | evaluation of the replicas abandoned: a signal was received",
             (long long)state_.step);
    return false;
  }
  bool done = true;
  with_evaluation_weights([&] {
    if (eval) done = evaluate_at(state_.step, replicas);
    if (samples && done) sample();
  });
  return done;
}

std::pair<int, int> TrainingRun::agreed_signal() {
  const double mine = double(interrupt_signal());
  const std::vector<double> all = comm::all_gather_doubles(comm_, {&mine, 1});
  for (int r = 0; r < world_; ++r)
    if (all[size_t(r)] != 0.0) return {int(all[size_t(r)]), r};
  return {SIGINT, 0};  // an evaluation stops only on a signal; never reached
}

void TrainingRun::sample() {
  if (!inputs_.tokenizer || rank_ != 0) return;
  const data::Tokenizer& tok = *inputs_.tokenizer;
  std::vector<int32_t> prompt = {int32_t(tok.document_token())};
  auto out =
      eval::generate(*model_, prompt, int(tc_.sample_tokens), eval::SamplingOptions{}, sample_rng_);
  std::vector<uint32_t> ids(out.begin(), out.end());
  log_info("sample: %s", tok.decode(ids).c_str());
}

}  // namespace gossamer::train
