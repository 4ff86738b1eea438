// Implementation of the training benchmark: train_step() (forward, backward, the optimizer's
// communication, clip, update) on synthetic tokens, on every rank of the job; rank 0 prints
// the medians.
#include "bench/train_bench.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "comm/communicator.h"
#include "comm/gather_values.h"
#include "comm/launch_env.h"
#include "comm/zip/zip_communicator.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/log.h"
#include "core/median.h"
#include "core/memory_usage.h"
#include "core/rng.h"
#include "core/timer.h"
#include "kernels/cpu/cpu_setup.h"
#include "kernels/cpu/gemm.h"
#include "model/model.h"
#include "optim/registry.h"
#include "train/mfu.h"
#include "train/train_step.h"

namespace gossamer::bench {

int run_train_bench(run::RunConfig config, const BenchOptions& options) {
  config.parallel.validate();
  auto comm_ptr =
      comm::make_communicator(config.parallel.backend, comm::BufferLocation::BUFFER_LOCATION_HOST);
  log_set_rank(comm_ptr->rank());
  comm_ptr->set_timeout(config.parallel.timeout_s);
  comm_ptr = comm::zip::wrap_with_compression(std::move(comm_ptr), config.parallel.zip_options());
  comm::Communicator& comm = *comm_ptr;
  comm.set_timeout(config.parallel.timeout_s);
  const int world = comm.size();
  config.validate(world);
  kernels::cpu::configure_cpu_kernels(config.kernels, comm::ranks_on_this_node(world));
  const auto& ops = kernels::cpu_ops();
  const int B = config.data.micro_batch, T = config.data.seq_len;
  const int64_t accum = config.grad_accum_steps(world);
  auto model_ptr = model::make_model(config.model, B, T, ops, config.kernels.matmul_dtype);
  model::Model& model = *model_ptr;
  model.init_weights(config.train.seed);
  auto optimizer = optim::make_optimizer({config.optimizer, config.parallel, model.layout(), ops,
                                          comm, comm, config.train.seed, config.train.steps});
  train::attach_optimizer(model, *optimizer);
  reset_peak_resident();  // the peak of the steps: set-up's buffers given back do not count

  HostBuffer<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
  Rng rng(config.train.seed, uint64_t(comm.rank()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i] = int32_t(rng.below(config.model.vocab_size));
    targets[i] = int32_t(rng.below(config.model.vocab_size));
  }
  // Measured on this machine (never the config's metrics.peak_gflops): the peak of the
  // products in their dtype, as a training run with metrics.peak_gflops = 0 measures it.
  train::MfuMeter mfu = train::make_mfu_meter(0, ops, config.kernels.matmul_dtype, world);
  const double flops_per_token = model::flops_per_token(model, T);

  std::vector<double> step_s, fwd_s, bwd_s, opt_s, wait_s, sent;
  double loss = 0;
  for (int64_t i = 0; i < options.warmup + options.steps; ++i) {
    comm.set_context(strprintf("bench step %lld", (long long)i + 1));
    const comm::CommStats before = comm.stats();
    Stopwatch total;
    const train::StepTimings st =
        train::train_step(model, *optimizer, accum, B, T, inputs.data(), targets.data(),
                          [](int32_t*, int32_t*) {}, {i + 1, 1e-4});
    // Ranks finish a step together, so the slowest rank's time is the step time.
    const double mine = total.seconds();
    const std::vector<double> all = comm::all_gather_doubles(comm, {&mine, 1});
    const comm::CommStats delta = comm.stats().since(before);
    loss = st.local_loss;
    if (i >= options.warmup) {
      step_s.push_back(*std::max_element(all.begin(), all.end()));
      fwd_s.push_back(st.fwd_s), bwd_s.push_back(st.bwd_s), opt_s.push_back(st.optim_s);
      wait_s.push_back(delta.seconds_waited());
      sent.push_back(double(delta.bytes_sent()));
    }
  }
  const double med = median(step_s);
  const double tok_s = double(B) * T * double(accum) * world / med;
  const double achieved = flops_per_token * tok_s / 1e9;
  const double utilisation = mfu.mfu(flops_per_token * tok_s);
  const double machine_peak = mfu.peak_gflops() * world;  // each rank measured its own share
  if (comm.rank() == 0) {
    std::printf(
        "| model | params | optimizer | B | T | accum | ranks | threads/rank | zero | overlap | "
        "wire | products "
        "| step ms (median) | min | max | fwd ms | bwd ms | optim ms | comm wait ms | sent MB/step "
        "| tokens/s | GFLOP/s | peak GFLOP/s | MFU | peak resident MiB in the steps (rank 0) "
        "|\n");
    std::printf(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|-"
        "--|-"
        "--|"
        "---|\n");
    std::printf(
        "| L%d C%d H%d V%d | %.2fM | %s | %d | %d | %lld | %d | %d | %d | %s | %s | %s | %.1f | "
        "%.1f "
        "| %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.1f | %.1f | %.1f%% | %.1f |\n",
        config.model.n_layer, config.model.d_model, config.model.n_head, config.model.vocab_size,
        model.layout().total() / 1e6, optimizer->name(), B, T, (long long)accum, world,
        omp_get_max_threads(), config.parallel.zero_stage, config.parallel.overlap ? "yes" : "no",
        std::string(enum_name(config.parallel.comm_dtype)).c_str(),
        std::string(enum_name(config.kernels.matmul_dtype)).c_str(), 1e3 * med,
        1e3 * *std::min_element(step_s.begin(), step_s.end()),
        1e3 * *std::max_element(step_s.begin(), step_s.end()), 1e3 * median(fwd_s),
        1e3 * median(bwd_s), 1e3 * median(opt_s), 1e3 * median(wait_s), median(sent) / 1e6, tok_s,
        achieved, machine_peak, 100.0 * utilisation,
        double(peak_resident_bytes()) / double(1 << 20));
    std::fflush(stdout);
  }
  log_info("final loss %.4f (synthetic tokens; a sanity value, not a result)", loss);
  comm.barrier();
  return 0;
}

}  // namespace gossamer::bench
