// Implementation of run_training (see trainer.h).
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "comm/launch_env.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "eval/evaluate.h"
#include "eval/sampler.h"
#include "hf/import.h"
#include "io/atomic_file.h"
#include "kernels/cpu/cpu_setup.h"
#include "kernels/cpu/gemm.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "optim/lr_schedule.h"
#include "train/checkpoint.h"
#include "train/fault_injection.h"
#include "train/interrupt.h"
#include "train/metrics_log.h"
#include "train/step_telemetry.h"
#include "train/train_step.h"

namespace gossamer::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
nlohmann::json optim_metrics_json(const optim::Optimizer& optimizer) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : optimizer.step_metrics()) j[key] = value;
  return j;
}
}  // namespace

namespace {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = long(s + 0.5);
  if (t >= 3600) return strprintf("%ldh%02ldm", t / 3600, (t / 60) % 60);
  if (t >= 60) return strprintf("%ldm%02lds", t / 60, t % 60);
  return strprintf("%lds", t);
}

void prepare_run_dir(const std::string& dir, const json& config) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  GOSSAMER_CHECK(!ec && fs::is_directory(dir), "train.out_dir: cannot create run directory %s: %s",
                 dir.c_str(), ec ? ec.message().c_str() : "not a directory");
  io::write_file_atomically((fs::path(dir) / "config.json").string(), config.dump(2) + "\n");
}

// A multi-rank job stopping on a signal has this long to finish its step and checkpoint.
constexpr double kSignalGraceSeconds = 20;

int train_on(comm::Communicator& comm, RunConfig config, const std::string& resume_path,
             const std::string& init_from);

}  // namespace

int run_training(RunConfig config, const std::string& resume_path, const std::string& init_from) {
  interrupt_install();  // first: every thread created from here on inherits the mask
  config.parallel.validate();
  std::unique_ptr<comm::Communicator> comm = comm::make_communicator(config.parallel.backend);
  log_set_rank(comm->rank());
  comm->set_timeout(config.parallel.timeout_s);
  try {
    return train_on(*comm, std::move(config), resume_path, init_from);
  } catch (const CollectiveError&) {
    throw;  // every rank stops here together; the communicator shuts down normally
  } catch (const Error& e) {
    // One rank failing must not leave the others waiting in a collective.
    if (comm->size() > 1) comm->abort(1, e.what());
    throw;
  }
}

namespace {

int train_on(comm::Communicator& comm, RunConfig config, const std::string& resume_path,
             const std::string& init_from) {
  const int world = comm.size(), rank = comm.rank();
  config.validate(world);
  if (world > 1) interrupt_set_grace(kSignalGraceSeconds, rank);
  const auto& d = config.data;
  const auto& tc = config.train;
  const int B = d.micro_batch, T = d.seq_len;
  const int64_t accum = config.grad_accum_steps(world);
  const int64_t tokens_per_step = int64_t(B) * T * world * accum;

  kernels::cpu::configure_cpu_kernels(config.kernels, comm::ranks_on_this_node(world));
  const kernels::OpTable& ops = kernels::cpu_ops();

  // Everything that can fail on input is opened before any output is written.
  data::DataLoader train_loader(data::expand_shard_patterns(d.train), T, tc.seed, d.shuffle,
                                uint32_t(config.model.vocab_size));
  GOSSAMER_CHECK(train_loader.num_windows() >= uint64_t(B) * world,
                 "data.train: holds %llu windows of %d tokens, fewer than one step needs (%d "
                 "ranks x micro_batch %d)",
                 (unsigned long long)train_loader.num_windows(), T + 1, world, B);
  std::optional<data::DataLoader> val_loader;
  if (!d.val.empty()) {
    val_loader.emplace(data::expand_shard_patterns(d.val), T, tc.seed, false,
                       uint32_t(config.model.vocab_size));
    GOSSAMER_CHECK(val_loader->num_windows() >= uint64_t(B),
                   "data.val: holds %llu windows of %d tokens, fewer than one micro-batch (%d)",
                   (unsigned long long)val_loader->num_windows(), T + 1, B);
  }
  std::unique_ptr<data::Tokenizer> tokenizer;
  if (tc.sample_every > 0) tokenizer = data::load_tokenizer(d.tokenizer);
  GOSSAMER_CHECK(!tokenizer || uint32_t(config.model.vocab_size) <= tokenizer->vocab_size(),
                 "data.tokenizer: %s has %u tokens, fewer than model.vocab_size %d: samples could "
                 "hold ids it cannot decode",
                 d.tokenizer.c_str(), tokenizer ? tokenizer->vocab_size() : 0,
                 config.model.vocab_size);

  auto model_ptr = model::make_model(config.model, B, T, ops);
  model::Model& model = *model_ptr;
  model.init_weights(tc.seed);
  if (!init_from.empty())
    hf::init_weights_from(init_from, model);  // shapes checked; fresh optimizer
  auto optimizer =
      optim::make_optimizer(config.optimizer, config.parallel, model.layout(), ops, comm);

  TrainerState state = initial_trainer_state(tc.seed);
  std::string resumed_from;
  if (!resume_path.empty()) {
    resumed_from = resolve_checkpoint(resume_path);
    load_model_weights(resumed_from, model);
    load_training_state(resumed_from, *optimizer, state);
    train_loader.set_position(state.loader);
    GOSSAMER_CHECK(state.step < tc.steps,
                   "--resume %s: the checkpoint is at step %lld, train.steps is %lld: nothing "
                   "left to train",
                   resumed_from.c_str(), (long long)state.step, (long long)tc.steps);
  }

  json resolved = to_json(config);
  std::optional<MetricsLog> metrics;  // rank 0 writes the run directory
  if (rank == 0) {
    prepare_run_dir(tc.out_dir, resolved);
    metrics.emplace((fs::path(tc.out_dir) / "metrics.jsonl").string(),
                    resumed_from.empty() ? -1 : state.step);
  }

  const double peak = config.metrics.peak_gflops > 0 ? config.metrics.peak_gflops
                                                     : kernels::cpu::gemm_peak_gflops_measured();
  const double flops_per_token = model::flops_per_token(model, T);
  log_info(
      "model: %s, %zu parameters (%.2f M), layers %d, d_model %d, heads %d, vocab %d "
      "(padded %d)",
      model::family_name(config.model.family), model.layout().total(), model.layout().total() / 1e6,
      config.model.n_layer, config.model.d_model, config.model.n_head, config.model.vocab_size,
      config.model.padded_vocab_resolved());
  log_info(
      "data: %llu training windows of %d tokens; batch %d x %d x %lld accumulation = %lld "
      "tokens per step",
      (unsigned long long)train_loader.num_windows(), T + 1, B, T, (long long)accum,
      (long long)tokens_per_step);
  log_info("parallel: %d rank(s), backend %s, zero_stage %d, gradients as %s in %g MB buckets%s",
           world, comm.backend(), config.parallel.zero_stage, config.parallel.comm_dtype.c_str(),
           config.parallel.bucket_mb, config.parallel.overlap ? ", overlapped with backward" : "");
  log_info(
      "optimizer: %s, state %.1f MB per rank; MFU peak %.1f GFLOP/s per rank (%s); %.3g FLOP per "
      "token",
      optimizer->name(), optimizer->state_bytes() / 1e6, peak,
      config.metrics.peak_gflops > 0 ? "metrics.peak_gflops" : "measured sgemm", flops_per_token);
  if (!resumed_from.empty())
    log_info("resumed from %s at step %lld", resumed_from.c_str(), (long long)state.step);

  const FaultPlan fault = fault_plan_from_env();
  HostBuffer<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
  Rng sample_rng;
  sample_rng.set_state(state.sample_rng);

  auto run_eval = [&](int64_t step) {
    if (!val_loader) return;
    Stopwatch w;
    eval::EvalResult r = eval::evaluate(model, *val_loader, B, tc.eval_batches, inputs.data(),
                                        targets.data(), &comm);
    log_info("step %lld | val loss %.4f | %lld tokens | %.1f s", (long long)step, r.loss,
             (long long)r.tokens, w.seconds());
    if (metrics) metrics->write({{"step", step}, {"val_loss", r.loss}, {"val_tokens", r.tokens}});
  };
  auto run_sample = [&]() {
    if (!tokenizer || rank != 0) return;
    std::vector<int32_t> prompt = {int32_t(tokenizer->document_token())};
    auto out =
        eval::generate(model, prompt, int(tc.sample_tokens), eval::SamplingOptions{}, sample_rng);
    std::vector<uint32_t> ids(out.begin(), out.end());
    log_info("sample: %s", tokenizer->decode(ids).c_str());
  };

  if (resumed_from.empty() && tc.eval_every > 0) run_eval(0);  // the loss before training
  Stopwatch run_clock;
  double step_time_sum = 0;
  int64_t timed_steps = 0, steps_this_run = 0;
  int exit_code = 0;
  for (int64_t step = state.step; step < tc.steps; ++step) {
    Stopwatch step_clock;
    comm.set_context(strprintf("step %lld", (long long)step + 1));
    interrupt_note_step(step + 1);
    const comm::CommStats comm_before = comm.stats();
    const double lr = optim::lr_at(config.schedule, config.optimizer.lr, step, tc.steps);
    if (fault.at("exit", rank, step + 1)) std::_Exit(9);
    StepHooks hooks;
    if (fault.at("nan", rank, step + 1)) hooks.grad_scale_factor = std::nanf("");
    if (fault.at("hang", rank, step + 1))
      hooks.before_step = [] {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      };
    const StepTimings st = train_step(
        model, *optimizer, accum, B, T, inputs.data(), targets.data(),
        [&](int32_t* in, int32_t* tg) { train_loader.next_batch(rank, world, B, in, tg); },
        {step + 1, lr}, hooks);
    const double local_loss = st.local_loss, norm = st.result.grad_norm;
    const double t_fwd = st.fwd_s, t_bwd = st.bwd_s, t_opt = st.optim_s;
    // Every rank learns the mean loss, whether any rank was interrupted, and each rank's
    // communication this step.
    const StepTelemetry tel = exchange_step_telemetry(comm, local_loss, interrupt_requested(),
                                                      comm.stats().since(comm_before));
    const double loss = tel.mean_loss;
    if (!std::isfinite(loss))  // the mean over ranks: every rank sees the same value
      throw CollectiveError(
          strprintf("step %lld: non-finite loss (%g); stopping (the last checkpoint is intact)",
                    (long long)step + 1, loss));
    const int64_t check_every = config.parallel.check_replicas_every;
    if (check_every > 0 && (step + 1) % check_every == 0)
      check_replicas_identical(comm, model.params(), step + 1);
    const comm::CommStats comm_step = comm.stats().since(comm_before);
    const double dt = step_clock.seconds();

    state.step = step + 1;
    state.tokens_seen += tokens_per_step;
    state.loader = train_loader.position();
    // The first step of a process warms caches and pages; the ETA ignores it.
    if (++steps_this_run > 1) step_time_sum += dt, ++timed_steps;
    const double avg = timed_steps ? step_time_sum / timed_steps : dt;
    const double tok_s = tokens_per_step / dt;
    const double mfu = flops_per_token * tok_s / (peak * world * 1e9);  // peak is per rank
    const double t_comm = comm_step.seconds_waited();
    if (metrics)
      metrics->write({{"step", state.step},
                      {"loss", loss},
                      {"lr", lr},
                      {"grad_norm", norm},
                      {"tokens_per_s", tok_s},
                      {"mfu", mfu},
                      {"bytes_sent", comm_step.bytes_sent()},
                      {"comm", comm_stats_json(comm_step)},
                      {"ranks", tel.ranks_json()},
                      {"optim", optim_metrics_json(*optimizer)},
                      {"tokens", state.tokens_seen},
                      {"time_s",
                       {{"total", dt},
                        {"fwd", t_fwd},
                        {"bwd", t_bwd},
                        {"optim", t_opt},
                        {"comm_wait", t_comm}}}});
    if (state.step % tc.log_every == 0 || state.step == tc.steps)
      log_info(
          "step %lld/%lld | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | MFU %.1f%% | "
          "sent %s | fwd %.0f ms bwd %.0f ms optim %.0f ms (comm wait %.0f ms) | ETA %s",
          (long long)state.step, (long long)tc.steps, loss, lr, norm, tok_s, 100 * mfu,
          format_bytes(double(comm_step.bytes_sent())).c_str(), 1e3 * t_fwd, 1e3 * t_bwd,
          1e3 * t_opt, 1e3 * t_comm, format_duration(avg * double(tc.steps - state.step)).c_str());

    const bool last = state.step == tc.steps;
    if ((tc.eval_every > 0 && state.step % tc.eval_every == 0) || (last && tc.eval_every > 0))
      run_eval(state.step);
    if (tc.sample_every > 0 && (state.step % tc.sample_every == 0 || last)) run_sample();
    const bool interrupted = tel.any_interrupted;  // the same decision on every rank
    if (last || interrupted || (tc.checkpoint_every > 0 && state.step % tc.checkpoint_every == 0)) {
      state.sample_rng = sample_rng.state();
      const std::string path =
          save_checkpoint(tc.out_dir, model, *optimizer, state, resolved, comm);
      if (rank == 0) {
        prune_checkpoints(tc.out_dir, tc.keep_checkpoints);
        log_info("checkpoint %s", path.c_str());
      }
    }
    if (interrupted && !last) {
      if (rank == 0)
        log_warn("interrupted by signal %d after step %lld; resume with --resume %s",
                 interrupt_signal(), (long long)state.step, tc.out_dir.c_str());
      exit_code = 130;
      break;
    }
  }
  log_info("done in %s", format_duration(run_clock.seconds()).c_str());
  comm.barrier();
  return exit_code;
}

}  // namespace

}  // namespace gossamer::train
