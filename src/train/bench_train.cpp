// Implementation of the training benchmark: forward + backward + clip + AdamW per step.
#include "train/bench_train.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/buffer.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "kernels/cpu/gemm.h"
#include "model/model.h"
#include "train/trainer.h"

namespace gossamer::train {

int run_train_bench(RunConfig config, const BenchOptions& options) {
  config.validate(1);
  configure_cpu_kernels(config.kernels);
  const auto& ops = kernels::cpu_ops();
  const int B = config.data.micro_batch, T = config.data.seq_len;
  auto model_ptr = model::make_model(config.model, B, T, ops);
  model::Model& model = *model_ptr;
  model.init_weights(config.train.seed);
  auto optimizer = optim::make_optimizer(config.optimizer, model.layout(), ops);

  HostBuffer<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
  Rng rng(config.train.seed);
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i] = int32_t(rng.below(config.model.vocab_size));
    targets[i] = int32_t(rng.below(config.model.vocab_size));
  }
  const double peak = kernels::cpu::gemm_peak_gflops_measured();
  const double flops_per_token = model::flops_per_token(model, T);

  std::vector<double> step_s, fwd_s, bwd_s, opt_s;
  float loss = 0;
  for (int64_t i = 0; i < options.warmup + options.steps; ++i) {
    Stopwatch total, w;
    model.zero_grad();
    loss = model.forward(inputs.data(), targets.data(), B, T);
    const double f = w.seconds();
    w.reset();
    model.backward(1.0f);
    const double b = w.seconds();
    w.reset();
    optimizer->step(model.params(), model.grads(), {i + 1, 1e-4});  // clips, then updates
    const double o = w.seconds();
    if (i >= options.warmup) {
      step_s.push_back(total.seconds());
      fwd_s.push_back(f), bwd_s.push_back(b), opt_s.push_back(o);
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  const double med = median(step_s);
  const double tok_s = double(B) * T / med;
  const double achieved = flops_per_token * tok_s / 1e9;
  std::printf(
      "| model | params | B | T | threads | gemm | step ms (median) | min | max | fwd ms | "
      "bwd ms | optim ms | tokens/s | GFLOP/s | sgemm peak GFLOP/s | MFU |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::printf(
      "| L%d C%d H%d V%d | %.2fM | %d | %d | %d | %s | %.1f | %.1f | %.1f | %.1f | %.1f | "
      "%.1f | %.0f | %.1f | %.1f | %.1f%% |\n",
      config.model.n_layer, config.model.d_model, config.model.n_head, config.model.vocab_size,
      model.layout().total() / 1e6, B, T, omp_get_max_threads(), config.kernels.gemm.c_str(),
      1e3 * med, 1e3 * *std::min_element(step_s.begin(), step_s.end()),
      1e3 * *std::max_element(step_s.begin(), step_s.end()), 1e3 * median(fwd_s),
      1e3 * median(bwd_s), 1e3 * median(opt_s), tok_s, achieved, peak, 100.0 * achieved / peak);
  log_info("final loss %.4f (synthetic tokens; a sanity value, not a result)", loss);
  return 0;
}

}  // namespace gossamer::train
