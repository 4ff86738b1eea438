// TrainingRun (see training_run.h): a TrainingRun opens and checks every input
// before it writes anything, builds the model and the optimizer, restores a checkpoint or
// initialises the weights, attaches the optimizer, then runs the steps. Per step it follows the
// optimizer's replica contract: ranks agree on the loss and on interrupts after every step,
// except for methods whose replicas are independent, which agree only at the log, evaluation
// and checkpoint cadence; evaluation and model.safetensors see the optimizer's evaluation
// weights when its replicas differ.
#include "train/training_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "comm/gather_values.h"
#include "comm/launch_env.h"
#include "comm/sim_clock.h"
#include "comm/zip/zip_communicator.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory_usage.h"
#include "core/timer.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "eval/evaluate.h"
#include "eval/sampler.h"
#include "io/atomic_file.h"
#include "io/json_path.h"
#include "kernels/cpu/cpu_setup.h"
#include "kernels/cpu/gemm.h"
#include "kernels/ops.h"
#include "model/family.h"
#include "model/host_params.h"
#include "model/model.h"
#include "optim/lr_schedule.h"
#include "optim/registry.h"
#include "run/checkpoint.h"
#include "run/device_ops.h"
#include "run/model_source.h"
#include "run/resume_check.h"
#include "train/fault_injection.h"
#include "train/interrupt.h"
#include "train/memory_check.h"
#include "train/metrics_log.h"
#include "train/mfu.h"
#include "train/rank_agreement.h"
#include "train/run_directory.h"
#include "train/step_telemetry.h"
#include "train/train_step.h"

namespace gossamer::train {

namespace fs = std::filesystem;

namespace {

// A multi-rank job stopping on a signal has this long to finish its step and checkpoint.
constexpr double kSignalGraceSeconds = 20;

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = long(s + 0.5);
  if (t >= 3600) return strprintf("%ldh%02ldm", t / 3600, (t / 60) % 60);
  if (t >= 60) return strprintf("%ldm%02lds", t / 60, t % 60);
  return strprintf("%lds", t);
}

// The run directory was claimed (train/run_directory.h): its resolved config goes in first.
void prepare_run_dir(const std::string& dir, const json& config) {
  io::write_file_atomically((fs::path(dir) / "config.json").string(), config.dump(2) + "\n");
}

json optim_metrics_json(const optim::Optimizer& optimizer) {
  json j = json::object();
  for (const auto& [key, value] : optimizer.step_metrics()) j[key] = value;
  return j;
}

// The data files a run reads, each by path and size (what every rank must agree on).
json data_identity(const data::DataConfig& d) {
  json files = json::array();
  for (const std::string& pattern : {d.train, d.val}) {
    if (pattern.empty()) continue;
    for (const std::string& path : data::expand_shard_patterns(pattern))
      files.push_back({{"path", path}, {"bytes", fs::file_size(path)}});
  }
  return files;
}

}  // namespace

Inputs open_inputs(const run::RunConfig& config, int world) {
  const auto& d = config.data;
  const uint64_t seed = config.train.seed;
  const int B = d.micro_batch, T = d.seq_len;
  Inputs in{data::DataLoader(data::expand_shard_patterns(d.train), T, seed, d.shuffle,
                             uint32_t(config.model.vocab_size)),
            std::nullopt, nullptr};
  GOSSAMER_CHECK(in.train.num_windows() >= uint64_t(B) * world,
                 "data.train: holds %llu windows of %d tokens, fewer than one step needs (%d "
                 "ranks x micro_batch %d)",
                 (unsigned long long)in.train.num_windows(), T + 1, world, B);
  if (!d.val.empty()) {
    in.val.emplace(data::expand_shard_patterns(d.val), T, seed, false,
                   uint32_t(config.model.vocab_size));
    GOSSAMER_CHECK(in.val->num_windows() >= uint64_t(B),
                   "data.val: holds %llu windows of %d tokens, fewer than one micro-batch (%d)",
                   (unsigned long long)in.val->num_windows(), T + 1, B);
  }
  if (config.train.sample_every > 0) in.tokenizer = data::load_tokenizer(d.tokenizer);
  GOSSAMER_CHECK(!in.tokenizer || uint32_t(config.model.vocab_size) <= in.tokenizer->vocab_size(),
                 "data.tokenizer: %s has %u tokens, fewer than model.vocab_size %d: samples could "
                 "hold ids it cannot decode",
                 d.tokenizer.c_str(), in.tokenizer ? in.tokenizer->vocab_size() : 0,
                 config.model.vocab_size);
  return in;
}

TrainingRun::TrainingRun(comm::Communicator& comm, comm::Communicator& buffers,
                         const kernels::OpTable& ops, run::RunConfig config,
                         const TrainStart& start)
    : comm_(comm),
      buffers_(buffers),
      config_(std::move(config)),
      tc_(config_.train),
      world_(comm.size()),
      rank_(comm.rank()),
      B_(config_.data.micro_batch),
      T_(config_.data.seq_len),
      accum_(config_.grad_accum_steps(world_)),
      tokens_per_step_(int64_t(B_) * T_ * world_ * accum_),
      ops_(ops),
      inputs_(open_inputs(config_, world_)),
      tokens_(size_t(B_) * T_),
      targets_(size_t(B_) * T_) {
  check_ranks_agree(comm_, run::to_json(config_), data_identity(config_.data));
  if (world_ > 1) interrupt_set_grace(kSignalGraceSeconds, rank_);
  const RunStart how = !start.resume.empty() ? RunStart::RUN_START_RESUME
                       : start.overwrite     ? RunStart::RUN_START_OVERWRITE
                                             : RunStart::RUN_START_NEW;
  if (rank_ == 0) check_run_directory(tc_.out_dir, how, start.resume);  // before loading
  build_and_restore(start.resume, weights_source(start), start.allow_change);
  check_replica_contract();
  resolved_ = run::to_json(config_);
  if (rank_ == 0) {  // the one rank that writes the run directory owns it from here on
    lock_ = claim_run_directory(tc_.out_dir, how, start.resume);
    warn_later_checkpoints();
    prepare_run_dir(tc_.out_dir, resolved_);
    metrics_.emplace((fs::path(tc_.out_dir) / "metrics.jsonl").string(),
                     resumed_from_.empty() ? -1 : state_.step);
  }
  if (config_.metrics.mfu)
    mfu_.emplace(
        make_mfu_meter(config_.metrics.peak_gflops, ops_, config_.kernels.matmul_dtype, world_));
  flops_per_token_ = model::flops_per_token(*model_, T_);
  fault_ = fault_plan_from_env();
  sample_rng_.set_state(state_.sample_rng);
  log_setup();
}

// A run resumed from an older checkpoint than its directory's newest: the later ones (an
// earlier timeline's) stay until this run writes their steps, and --resume RUN takes the newest.
void TrainingRun::warn_later_checkpoints() const {
  if (resumed_from_.empty()) return;
  const std::vector<int64_t> later = run::checkpoints_after(tc_.out_dir, state_.step);
  if (later.empty()) return;
  log_warn(
      "resume: %s also holds %zu checkpoint(s) after step %lld (the newest: step %lld), written "
      "before this resume; they are kept, each replaced when this run writes its step, and "
      "until then --resume %s continues from the newest of them",
      tc_.out_dir.c_str(), later.size(), (long long)state_.step, (long long)later.back(),
      tc_.out_dir.c_str());
}

// A resume with another train.steps stretches a cosine or linear decay over the new length: the
// lr jumps at the resumed step. Said loudly, with both values (wsd continues unchanged).
void TrainingRun::warn_stretched_schedule(const json& saved, int64_t step) const {
  const json* before = io::find_dotted(saved, "train.steps");
  if (rank_ != 0 || !before || !before->is_number_integer()) return;
  const int64_t old_steps = before->get<int64_t>();
  if (old_steps == tc_.steps) return;
  const double was = optim::lr_at(config_.schedule, config_.optimizer.lr, step, old_steps);
  const double is = optim::lr_at(config_.schedule, config_.optimizer.lr, step, tc_.steps);
  if (was == is) return;
  log_warn(
      "resume: train.steps changed from %lld to %lld, and the %s schedule stretches over the new "
      "length: the lr at step %lld is %.3g instead of %.3g (a jump of %+.0f%%); for runs made "
      "longer as they go, schedule.decay = \"wsd\" keeps the lr until its final decay",
      (long long)old_steps, (long long)tc_.steps,
      std::string(enum_name(config_.schedule.decay)).c_str(), (long long)step + 1, is, was,
      100.0 * (is / was - 1.0));
}

TrainingRun::~TrainingRun() {
  if (comm::SimClock* sim = comm_.sim_clock(); sim && config_.parallel.sim.gflops > 0)
    sim->set_cpu_source({});  // the clock keeps what it charged; the model goes
}

// Where a new run's weights come from: train.init_from (--init-from sets it); nothing on
// --resume, which restores the checkpoint's.
std::string TrainingRun::weights_source(const TrainStart& start) const {
  if (tc_.init_from.empty() || start.resume.empty()) return tc_.init_from;
  if (rank_ == 0)
    log_info("train.init_from %s: unused, --resume restores the checkpoint's weights",
             tc_.init_from.c_str());
  return "";
}

// The model's weights: initialised, or from --init-from, or from the checkpoint of --resume
// (with the optimizer's state); then the optimizer takes the final buffers.
void TrainingRun::build_and_restore(const std::string& resume_path, const std::string& init_from,
                                    const std::vector<std::string>& allow_change) {
  model_ = model::make_model(config_.model, B_, T_, ops_, config_.kernels.matmul_dtype);
  if (comm::SimClock* sim = comm_.sim_clock(); sim && config_.parallel.sim.gflops > 0)
    sim->set_cpu_source([model = model_.get(), rate = 1e9 * config_.parallel.sim.gflops] {
      return model->flops_done() / rate;
    });
  model_->init_weights(tc_.seed);
  if (!init_from.empty()) run::init_weights_from(init_from, *model_);  // shapes checked
  optimizer_ = optim::make_optimizer({config_.optimizer, config_.parallel, model_->layout(), ops_,
                                      buffers_, comm_, tc_.seed, tc_.steps});
  check_device_support();
  state_ = run::initial_trainer_state(tc_.seed);
  state_.tokens_per_step = tokens_per_step_;
  if (!resume_path.empty() && run::is_run_without_checkpoints(resume_path, tc_.out_dir)) {
    if (rank_ == 0)
      log_warn(
          "--resume %s: the run stopped before its first checkpoint; starting it again from "
          "step 0",
          resume_path.c_str());
    if (fs::exists(fs::path(resume_path) / "config.json"))
      run::check_resume_changes(run::load_run_directory_config(resume_path), run::to_json(config_),
                                tokens_per_step_, tokens_per_step_, allow_change);
  } else if (!resume_path.empty()) {
    resumed_from_ = run::resolve_checkpoint_for_resume(resume_path);
    const run::TrainerState saved = run::read_checkpoint_trainer_state(resumed_from_);
    const int64_t saved_batch = saved.tokens_per_step > 0 ? saved.tokens_per_step
                                : saved.step > 0          ? saved.tokens_seen / saved.step
                                                          : 0;
    run::check_resume_changes(run::load_checkpoint_config(resumed_from_), run::to_json(config_),
                              saved_batch, tokens_per_step_, allow_change);
    warn_stretched_schedule(run::load_checkpoint_config(resumed_from_), saved.step);
    run::load_model_weights(resumed_from_, *model_);
    run::load_training_state(resumed_from_, *optimizer_, state_, rank_, world_);
    state_.tokens_per_step = tokens_per_step_;
    if (saved_batch != tokens_per_step_)  // a new stretch of this global batch (allowed above)
      state_.batch_since_step = state_.step, state_.batch_since_tokens = state_.tokens_seen;
    const uint64_t windows = inputs_.train.num_windows();
    GOSSAMER_CHECK(state_.loader.cursor <= windows,
                   "%s/trainer.json: loader.cursor %llu is beyond the %llu windows of an epoch of "
                   "data.train (were the shards or data.seq_len changed?)",
                   resumed_from_.c_str(), (unsigned long long)state_.loader.cursor,
                   (unsigned long long)windows);
    inputs_.train.set_position(state_.loader);
    GOSSAMER_CHECK(state_.step < tc_.steps,
                   "--resume %s: the checkpoint is at step %lld, train.steps is %lld: nothing "
                   "left to train",
                   resumed_from_.c_str(), (long long)state_.step, (long long)tc_.steps);
  }
  attach_optimizer(*model_, *optimizer_);
  peak_from_first_step_ = reset_peak_resident();  // set-up's buffers given back do not count
  if (optimizer_->replicas() != optim::Replicas::REPLICAS_IDENTICAL_EVERY_STEP)
    evaluation_weights_ = HostBuffer<float>(model_->layout().total());
}

// Buffers in device memory (kernels.device = cuda): what runs there so far, or an error naming
// the key before anything trained.
void TrainingRun::check_device_support() const {
  if (ops_.memory->host_accessible) return;
  const std::string device = std::string(enum_name(config_.kernels.device));
  GOSSAMER_CHECK(optimizer_->supports_device_memory(),
                 "optimizer.name = \"%s\" does not run with kernels.device = %s (its state or "
                 "loops are on the host: docs/CUDA.md)",
                 optimizer_->name(), device.c_str());
  log_info("device buffers: the model, its gradients and the optimizer's state in %s memory",
           ops_.memory->backend);  // the backends between the ranks: log_setup's parallel line
}

void TrainingRun::check_replica_contract() const {
  const int64_t every = config_.parallel.check_replicas_every;
  const optim::Replicas replicas = optimizer_->replicas();
  GOSSAMER_CHECK(every == 0 || replicas != optim::Replicas::REPLICAS_INDEPENDENT,
                 "parallel.check_replicas_every: optimizer \"%s\" keeps replicas that are %s, so "
                 "there is nothing to compare; set it to 0",
                 optimizer_->name(), optim::replicas_name(replicas));
  if (every > 0 && replicas == optim::Replicas::REPLICAS_IDENTICAL_AT_ROUND_END && rank_ == 0)
    log_info(
        "parallel.check_replicas_every: %s's replicas are %s; they are compared at the first "
        "round end at or after every N-th step",
        optimizer_->name(), optim::replicas_name(replicas));
}

void TrainingRun::log_setup() const {
  const model::Model& m = *model_;
  const auto& mc = config_.model;
  std::string products = "fp32";
  if (config_.kernels.matmul_dtype == kernels::MatmulDtype::MATMUL_DTYPE_BF16) {
    products = "bf16 (fp32 accumulation, fp32 master weights)";
    if (std::string_view(ops_.backend) == "cpu")  // which CPU path the bf16 ops take
      products += kernels::cpu::gemm_bf16_native()
                      ? "; on the CPU by oneDNN's " + kernels::cpu::gemm_bf16_implementation()
                      : "; on the CPU emulated (no bf16 instructions: oneDNN would take " +
                            kernels::cpu::gemm_bf16_implementation() +
                            "): rounded operands, fp32 gemm";
  }
  log_info(
      "model: %s, %zu parameters (%.2f M), layers %d, d_model %d, heads %d, vocab %d "
      "(padded %d); matrix products in %s",
      model::family_name(mc.family), m.layout().total(), m.layout().total() / 1e6, mc.n_layer,
      mc.d_model, mc.n_head, mc.vocab_size, mc.padded_vocab_resolved(), products.c_str());
  const int positions = B_ * T_, rows = m.head_chunk_rows();
  log_info(
      "model: LM head run with the cross-entropy in row chunks, %d positions per micro-batch in "
      "%d chunk(s) of up to %d rows: no (B, T, Vp) logits kept",
      positions, (positions + rows - 1) / rows, rows);
  log_info(
      "data: %llu training windows of %d tokens; micro-batch %d x seq_len %d x %d rank(s) x "
      "%lld accumulation step(s) = %lld tokens per step",
      (unsigned long long)inputs_.train.num_windows(), T_ + 1, B_, T_, world_, (long long)accum_,
      (long long)tokens_per_step_);
  const auto& par = config_.parallel;
  const std::string control =
      &buffers_ == &comm_ ? "" : strprintf(" (control values over %s)", comm_.backend());
  log_info("parallel: %d rank(s), backend %s%s, zero_stage %d, gradients as %s in %g MB buckets%s",
           world_, buffers_.backend(), control.c_str(), par.zero_stage,
           std::string(enum_name(par.comm_dtype)).c_str(), par.bucket_mb,
           par.overlap ? ", overlapped with backward" : "");
  const std::string peak = mfu_ ? strprintf("MFU peak %.1f GFLOP/s per rank (%s)",
                                            mfu_->peak_gflops(), mfu_->source().c_str())
                                : std::string("MFU off (metrics.mfu false)");
  log_info("optimizer: %s, state %s per rank, replicas %s; %s; %.3g FLOP per token",
           optimizer_->name(), format_bytes(double(optimizer_->state_bytes())).c_str(),
           optim::replicas_name(optimizer_->replicas()), peak.c_str(), flops_per_token_);
  if (!resumed_from_.empty())
    log_info("resumed from %s at step %lld", resumed_from_.c_str(), (long long)state_.step);
}

comm::CommStats TrainingRun::traffic() const {
  return &buffers_ == &comm_ ? comm_.stats() : comm_.stats().plus(buffers_.stats());
}

// Whether the ranks exchange telemetry after `step` (1-based): always, unless the optimizer's
// replicas are independent; then at the log, evaluation and checkpoint cadence only.
bool TrainingRun::agrees_after(int64_t step) const {
  if (world_ == 1 || optimizer_->replicas() != optim::Replicas::REPLICAS_INDEPENDENT) return true;
  const auto due = [step](int64_t every) { return every > 0 && step % every == 0; };
  return step == tc_.steps || due(tc_.log_every) || due(tc_.eval_every) ||
         due(tc_.checkpoint_every) || due(tc_.sample_every);
}

StepRecord TrainingRun::train_one_step(int64_t step) {
  const int64_t t = step + 1;
  Stopwatch clock;
  comm_.set_context(strprintf("step %lld", (long long)t));
  buffers_.set_context(comm_.context());
  interrupt_note_step(t);
  const comm::CommStats before = traffic();
  comm::SimClock* const sim = comm_.sim_clock();
  const double sim_start = sim ? sim->now() : 0.0;
  StepRecord r;
  r.lr = optim::lr_at(config_.schedule, config_.optimizer.lr, step, tc_.steps);
  if (fault_.at("exit", rank_, t)) std::_Exit(9);
  const bool computes = optimizer_->computes_step(t);
  if (computes && fault_.delays(rank_, t)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(fault_.delay_ms));
    if (sim) sim->advance(1e-3 * double(fault_.delay_ms));  // a sleep uses no CPU time
  }
  StepHooks hooks;
  if (fault_.at("nan", rank_, t)) hooks.grad_scale_factor = std::nanf("");
  if (fault_.at("hang", rank_, t))
    hooks.before_step = [] {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    };
  const auto fill = [&](int32_t* in, int32_t* tg) {
    inputs_.train.next_batch(rank_, world_, B_, in, tg);
  };
  if (computes) {
    r.timings = train_step(*model_, *optimizer_, accum_, B_, T_, tokens_.data(), targets_.data(),
                           fill, {t, r.lr}, hooks);
    last_local_loss_ = r.timings.local_loss;
  } else {  // this rank idles in this slot of its method's round
    r.timings = idle_step(*optimizer_, accum_, tokens_.data(), targets_.data(), fill, {t, r.lr});
    r.timings.local_loss = last_local_loss_;
  }
  r.agreed = agrees_after(t);
  if (r.agreed) {
    // Every rank learns the mean loss (over the ranks that computed this step), whether any rank
    // was interrupted, and each rank's communication this step.
    r.telemetry = exchange_step_telemetry(comm_, r.timings.local_loss, computes, interrupt_signal(),
                                          traffic().since(before));
    r.loss = r.telemetry.mean_loss;
    if (!std::isfinite(r.loss))  // the mean over ranks: every rank sees the same value
      throw CollectiveError(
          strprintf("step %lld: non-finite loss (%g); stopping (the last checkpoint is intact)",
                    (long long)t, r.loss));
  } else {
    r.loss = r.timings.local_loss;
    GOSSAMER_CHECK(!computes || std::isfinite(r.loss),
                   "step %lld: non-finite loss (%g) on rank %d; stopping (the last checkpoint is "
                   "intact)",
                   (long long)t, r.loss, rank_);
  }
  const int64_t every = config_.parallel.check_replicas_every;
  // Every N-th step, or the first step after it where the replicas are meant to be identical.
  if (every > 0 && t % every == 0) replica_check_due_ = true;
  if (replica_check_due_ && optimizer_->replicas_identical_now()) {
    if (world_ > 1)  // one rank has nothing to compare (and on a GPU it would read all back)
      check_replicas_identical(comm_, model::HostParamsView(*model_).span(), t);
    replica_check_due_ = false;
  }
  r.comm = traffic().since(before);
  r.seconds = clock.seconds();
  if (sim) {
    r.sim_time = sim->now();
    r.sim_s = r.sim_time - sim_start;
  }
  return r;
}

void TrainingRun::record(const StepRecord& r) {
  // The first step of a process warms caches and pages; the ETA ignores it.
  if (++steps_this_run_ > 1) step_time_sum_ += r.seconds, ++timed_steps_;
  const double avg = timed_steps_ ? step_time_sum_ / timed_steps_ : r.seconds;
  const double tok_s = tokens_per_step_ / r.seconds;
  const double mfu = mfu_ ? mfu_->mfu(flops_per_token_ * tok_s) : 0.0;  // reported if mfu_
  const StepTimings& st = r.timings;
  const double t_comm = r.comm.seconds_waited();
  if (metrics_) {
    json line = {{"step", state_.step},
                 {"loss", r.loss},
                 {"lr", r.lr},
                 {"grad_norm", st.result.grad_norm},
                 {"tokens_per_s", tok_s},
                 {"bytes_sent", r.comm.bytes_sent()},
                 {"comm", comm_stats_json(r.comm)},
                 {"optim", optim_metrics_json(*optimizer_)},
                 {"tokens", state_.tokens_seen},
                 {"time_s",
                  {{"total", r.seconds},
                   {"fwd", st.fwd_s},
                   {"bwd", st.bwd_s},
                   {"optim", st.optim_s},
                   {"comm_wait", t_comm}}}};
    if (mfu_) line["mfu"] = mfu;
    if (std::isfinite(r.sim_s)) {
      line["sim_time"] = r.sim_time;
      line["time_s"]["sim"] = r.sim_s;
    }
    if (r.agreed)
      line["ranks"] = r.telemetry.ranks_json();
    else
      line["loss_of"] = "rank 0";  // no agreement this step: rank 0's own loss
    metrics_->write(line);
  }
  if (state_.step % tc_.log_every == 0 || state_.step == tc_.steps)
    log_info(
        "step %lld/%lld | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | MFU %s | "
        "sent %s | fwd %.0f ms bwd %.0f ms optim %.0f ms (comm wait %.0f ms) | ETA %s",
        (long long)state_.step, (long long)tc_.steps, r.loss, r.lr, st.result.grad_norm, tok_s,
        mfu_ ? strprintf("%.1f%%", 100 * mfu).c_str() : "off",
        format_bytes(double(r.comm.bytes_sent())).c_str(), 1e3 * st.fwd_s, 1e3 * st.bwd_s,
        1e3 * st.optim_s, 1e3 * t_comm,
        format_duration(avg * double(tc_.steps - state_.step)).c_str());
}

// model.safetensors holds the evaluation weights; the optimizer's state() is read while the
// model holds this rank's own replica.
void TrainingRun::checkpoint() {
  state_.sample_rng = sample_rng_.state();
  const model::HostParamsView own(*model_);  // read back from device memory
  std::span<const float> weights = own.span();
  if (evaluation_weights_.size() > 0 && optimizer_->evaluation_weights(evaluation_weights_.span()))
    weights = evaluation_weights_.span();
  const std::string path = run::save_checkpoint(tc_.out_dir, model_->layout(), weights, *optimizer_,
                                                state_, resolved_, comm_);
  if (rank_ == 0) {
    run::prune_checkpoints(tc_.out_dir, tc_.keep_checkpoints, state_.step);
    log_info("checkpoint %s", path.c_str());
  }
}

int TrainingRun::run() {
  const auto due = [this](int64_t every) { return every > 0 && state_.step % every == 0; };
  Stopwatch run_clock;
  int exit_code = 0;
  bool done = true;
  if (resumed_from_.empty() && tc_.eval_every > 0)  // the loss before training
    with_evaluation_weights([&] { done = evaluate_at(0, std::nullopt); });
  if (!done) {  // a signal before the first step: nothing to checkpoint
    const auto [sig, from] = agreed_signal();
    if (rank_ == 0)
      log_warn("interrupted by %s (rank %d) before the first step; start again with --resume %s",
               interrupt_signal_name(sig), from, tc_.out_dir.c_str());
    exit_code = 128 + sig;
  }
  for (int64_t step = state_.step; done && step < tc_.steps; ++step) {
    const StepRecord r = train_one_step(step);
    state_.step = step + 1;
    state_.tokens_seen += tokens_per_step_;
    state_.loader = inputs_.train.position();
    record(r);

    const bool last = state_.step == tc_.steps;
    const bool eval = tc_.eval_every > 0 && (due(tc_.eval_every) || last);
    const bool samples = tc_.sample_every > 0 && (due(tc_.sample_every) || last);
    // A signal received during the evaluation abandons it (every rank alike): the step is
    // complete, so it is checkpointed at once rather than after the whole evaluation.
    const bool abandoned = (eval || samples) && !evaluate_and_sample(eval, samples);
    const bool interrupted = (r.agreed && r.telemetry.interrupt_signal != 0) || abandoned;
    if (last || interrupted || due(tc_.checkpoint_every)) checkpoint();
    if (interrupted && !last) {
      // Alike on every rank: the signal and the rank that received it (130 SIGINT, 143
      // SIGTERM, 129 SIGHUP), also on the ranks that received none.
      const auto [sig, from] =
          r.agreed && r.telemetry.interrupt_signal != 0
              ? std::pair{r.telemetry.interrupt_signal, r.telemetry.interrupt_rank}
              : agreed_signal();
      if (rank_ == 0)
        log_warn("interrupted by %s%s after step %lld; resume with --resume %s",
                 interrupt_signal_name(sig),
                 world_ > 1 ? strprintf(" on rank %d", from).c_str() : "", (long long)state_.step,
                 tc_.out_dir.c_str());
      exit_code = 128 + sig;
      break;
    }
  }
  log_info("done in %s; peak resident memory %.1f MiB%s",
           format_duration(run_clock.seconds()).c_str(),
           double(peak_resident_bytes()) / double(1 << 20),
           peak_from_first_step_ ? " (from the first step on)" : " (set-up included)");
  comm_.barrier();
  return exit_code;
}

}  // namespace gossamer::train
