// LocalRounds (see local_rounds.h): the slots of a round, the inner step with the rank's own
// step count, the outer update at round ends.
#include "optim/local_rounds.h"

#include "core/error.h"

namespace gossamer::optim {

LocalRounds::LocalRounds(const OptimizerSetup& setup, const char* name, const LocalSteps& steps,
                         const std::string& key)
    : LocalAdamW(setup), name_(name), steps_(steps), slots_(steps.max()), seed_(setup.seed) {
  GOSSAMER_CHECK(!steps.per_rank() || steps.values.size() == size_t(world_),
                 "%s: a per-rank list of %zu values, but the run has %d rank(s) (give one value "
                 "per rank, or one number for all)",
                 key.c_str(), steps.values.size(), world_);
  GOSSAMER_CHECK(setup.parallel.zero_stage == 0,
                 "parallel.zero_stage: optimizer \"%s\" keeps a whole replica and its state on "
                 "every rank and needs zero_stage 0 (found %d)",
                 name, setup.parallel.zero_stage);
}

bool LocalRounds::computes_step(int64_t t) const {
  return (t - 1) % slots_ < steps_.of(rank_);
}

StepResult LocalRounds::step(const StepContext& ctx) {
  GOSSAMER_CHECK(attached(), "%s: step before attach()", name_);
  StepResult result;
  if (computes_step(ctx.t)) {
    // The inner AdamW counts this rank's own steps (its bias correction), not the slots.
    const int64_t round = (ctx.t - 1) / slots_, slot = (ctx.t - 1) % slots_;
    result = LocalAdamW::step({round * steps_.of(rank_) + slot + 1, ctx.lr});
  }
  last_t_ = ctx.t;
  last_ended_round_ = ends_round(ctx.t);
  if (last_ended_round_) end_round(ctx.t / slots_);
  return result;
}

void LocalRounds::nesterov_on_mean(float* anchor, float* momentum, float* scratch, double lr,
                                   double mu) {
  float* x = params_.data();
  float* delta = scratch;
  const size_t n = total_, bytes = n * sizeof(float);
  ops_.memory->copy(delta, anchor, bytes);
  ops_.axpy(delta, -1.0f, x, n);  // anchor - x, exactly
  if (world_ > 1) {
    comm_.all_reduce(delta, n, comm::DType::F32, comm::ReduceOp::SUM).wait();
    ops_.scale(delta, float(1.0 / world_), n);
  }
  ops_.nesterov_outer(anchor, momentum, delta, float(lr), float(mu), n);
  ops_.memory->copy(x, anchor, bytes);
}

std::vector<StateTensor> LocalRounds::state() {
  std::vector<StateTensor> s = LocalAdamW::state();
  for (StateTensor& t : outer_state()) s.push_back(std::move(t));
  return s;
}

std::vector<std::pair<std::string, double>> LocalRounds::step_metrics() const {
  // The rounds completed after this step, and whether it ended one.
  std::vector<std::pair<std::string, double>> out = {{"round", double(last_t_ / slots_)},
                                                     {"round_end", last_ended_round_ ? 1 : 0}};
  if (last_ended_round_) round_metrics(out);
  return out;
}

}  // namespace gossamer::optim
