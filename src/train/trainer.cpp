// Implementation of run_training (see trainer.h).
#include "train/trainer.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/buffer.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "optim/lr_schedule.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/hf_import.h"
#include "train/interrupt.h"
#include "train/metrics_log.h"
#include "train/sampler.h"

namespace gossamer::train {

namespace fs = std::filesystem;
using nlohmann::json;

void configure_cpu_kernels(const KernelsConfig& kernels, int ranks_on_node) {
  int threads = kernels.threads;
  if (threads == 0) threads = std::max(1, omp_get_num_procs() / std::max(1, ranks_on_node));
  omp_set_num_threads(threads);
  kernels::cpu::gemm_set_backend(kernels::cpu::gemm_backend_from_string(kernels.gemm));
  log_info("cpu: %d OpenMP threads; gemm backend %s; %s", threads, kernels.gemm.c_str(),
           kernels::cpu::gemm_describe().c_str());
}

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
  const fs::path tmp = fs::path(dir) / ".config.json.tmp";
  {
    std::ofstream out(tmp);
    out << config.dump(2) << "\n";
    out.flush();
    GOSSAMER_CHECK(out.good(), "train.out_dir: cannot write into run directory %s", dir.c_str());
  }
  fs::rename(tmp, fs::path(dir) / "config.json", ec);
  GOSSAMER_CHECK(!ec, "train.out_dir: cannot write %s/config.json: %s", dir.c_str(),
                 ec.message().c_str());
}

}  // namespace

int run_training(RunConfig config, const std::string& resume_path, const std::string& init_from) {
  interrupt_install();  // first: every thread created from here on inherits the mask
  const int world = 1, rank = 0;
  config.validate(world);
  const auto& d = config.data;
  const auto& tc = config.train;
  const int B = d.micro_batch, T = d.seq_len;
  const int64_t accum = config.grad_accum_steps(world);
  const int64_t tokens_per_step = int64_t(B) * T * world * accum;

  configure_cpu_kernels(config.kernels);
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
  if (!init_from.empty()) init_weights_from(init_from, model);  // shapes checked; fresh optimizer
  auto optimizer = optim::make_optimizer(config.optimizer, model.layout(), ops);

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
  prepare_run_dir(tc.out_dir, resolved);
  MetricsLog metrics((fs::path(tc.out_dir) / "metrics.jsonl").string(),
                     resumed_from.empty() ? -1 : state.step);

  const double peak = config.metrics.peak_gflops > 0 ? config.metrics.peak_gflops
                                                     : kernels::cpu::gemm_peak_gflops_measured();
  const double flops_per_token = model::flops_per_token(model, T);
  log_info(
      "model: %s, %zu parameters (%.2f M), layers %d, d_model %d, heads %d, vocab %d "
      "(padded %d)",
      config.model.family.c_str(), model.layout().total(), model.layout().total() / 1e6,
      config.model.n_layer, config.model.d_model, config.model.n_head, config.model.vocab_size,
      config.model.padded_vocab_resolved());
  log_info(
      "data: %llu training windows of %d tokens; batch %d x %d x %lld accumulation = %lld "
      "tokens per step",
      (unsigned long long)train_loader.num_windows(), T + 1, B, T, (long long)accum,
      (long long)tokens_per_step);
  log_info("optimizer: %s, state %.1f MB; MFU peak %.1f GFLOP/s (%s); %.3g FLOP per token",
           optimizer->name(), optimizer->state_bytes() / 1e6, peak,
           config.metrics.peak_gflops > 0 ? "metrics.peak_gflops" : "measured sgemm",
           flops_per_token);
  if (!resumed_from.empty())
    log_info("resumed from %s at step %lld", resumed_from.c_str(), (long long)state.step);

  HostBuffer<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
  Rng sample_rng;
  sample_rng.set_state(state.sample_rng);

  auto run_eval = [&](int64_t step) {
    if (!val_loader) return;
    Stopwatch w;
    EvalResult r = evaluate(model, *val_loader, B, tc.eval_batches, inputs.data(), targets.data());
    log_info("step %lld | val loss %.4f | %lld tokens | %.1f s", (long long)step, r.loss,
             (long long)r.tokens, w.seconds());
    metrics.write({{"step", step}, {"val_loss", r.loss}, {"val_tokens", r.tokens}});
  };
  auto run_sample = [&]() {
    if (!tokenizer) return;
    std::vector<int32_t> prompt = {int32_t(tokenizer->document_token())};
    auto out = generate(model, prompt, int(tc.sample_tokens), SamplingOptions{}, sample_rng);
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
    const double lr = optim::lr_at(config.schedule, config.optimizer.lr, step, tc.steps);
    model.zero_grad();
    double loss = 0, t_fwd = 0, t_bwd = 0;
    for (int64_t micro = 0; micro < accum; ++micro) {
      train_loader.next_batch(rank, world, B, inputs.data(), targets.data());
      Stopwatch w;
      loss += model.forward(inputs.data(), targets.data(), B, T) / double(accum);
      t_fwd += w.seconds();
      w.reset();
      model.backward(1.0f / float(accum));
      t_bwd += w.seconds();
    }
    Stopwatch w;
    auto grads = model.grads();
    const double norm = std::sqrt(ops.sum_squares(grads.data(), grads.size()));
    GOSSAMER_CHECK(std::isfinite(norm) && std::isfinite(loss),
                   "step %lld: non-finite loss (%g) or gradient norm (%g) on rank %d; stopping "
                   "(the last checkpoint is intact)",
                   (long long)step, loss, norm, rank);
    const double clip = config.optimizer.grad_clip;
    if (clip > 0) {
      const double coef = clip / (norm + 1e-6);
      if (coef < 1.0) ops.scale(grads.data(), float(coef), grads.size());
    }
    optimizer->step(model.params(), model.grads(), {step + 1, lr});
    const double t_opt = w.seconds();
    const double dt = step_clock.seconds();

    state.step = step + 1;
    state.tokens_seen += tokens_per_step;
    state.loader = train_loader.position();
    // The first step of a process warms caches and pages; the ETA ignores it.
    if (++steps_this_run > 1) step_time_sum += dt, ++timed_steps;
    const double avg = timed_steps ? step_time_sum / timed_steps : dt;
    const double tok_s = tokens_per_step / dt;
    const double mfu = flops_per_token * tok_s / (peak * 1e9);
    metrics.write({{"step", state.step},
                   {"loss", loss},
                   {"lr", lr},
                   {"grad_norm", norm},
                   {"tokens_per_s", tok_s},
                   {"mfu", mfu},
                   {"bytes_sent", 0},
                   {"tokens", state.tokens_seen},
                   {"time_s", {{"total", dt}, {"fwd", t_fwd}, {"bwd", t_bwd}, {"optim", t_opt}}}});
    if (state.step % tc.log_every == 0 || state.step == tc.steps)
      log_info(
          "step %lld/%lld | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | MFU %.1f%% | "
          "sent 0 B | fwd %.0f ms bwd %.0f ms optim %.0f ms | ETA %s",
          (long long)state.step, (long long)tc.steps, loss, lr, norm, tok_s, 100 * mfu, 1e3 * t_fwd,
          1e3 * t_bwd, 1e3 * t_opt, format_duration(avg * double(tc.steps - state.step)).c_str());

    const bool last = state.step == tc.steps;
    if ((tc.eval_every > 0 && state.step % tc.eval_every == 0) || (last && tc.eval_every > 0))
      run_eval(state.step);
    if (tc.sample_every > 0 && (state.step % tc.sample_every == 0 || last)) run_sample();
    const bool interrupted = interrupt_requested();
    if (last || interrupted || (tc.checkpoint_every > 0 && state.step % tc.checkpoint_every == 0)) {
      state.sample_rng = sample_rng.state();
      const std::string path = save_checkpoint(tc.out_dir, model, *optimizer, state, resolved);
      prune_checkpoints(tc.out_dir, tc.keep_checkpoints);
      log_info("checkpoint %s", path.c_str());
    }
    if (interrupted && !last) {
      log_warn("interrupted by signal %d after step %lld; resume with --resume %s",
               interrupt_signal(), (long long)state.step, tc.out_dir.c_str());
      exit_code = 130;
      break;
    }
  }
  log_info("done in %s", format_duration(run_clock.seconds()).c_str());
  return exit_code;
}

}  // namespace gossamer::train
