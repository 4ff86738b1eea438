// run_training_ranks (see inprocess_ranks.h).
#include "train/inprocess_ranks.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "comm/inprocess_communicator.h"
#include "comm/launch_env.h"
#include "comm/sim_clock.h"
#include "core/error.h"
#include "core/log.h"
#include "train/interrupt.h"
#include "train/memory_check.h"

namespace gossamer::train {

int run_training_ranks(const run::RunConfig& config, const TrainStart& start, int ranks,
                       const char* key) {
  GOSSAMER_CHECK(ranks >= 1, "%s %d: the number of ranks must be at least 1", key, ranks);
  const comm::LaunchEnv env = comm::detect_launch_env();
  GOSSAMER_CHECK(std::string_view(env.source) == "none",
                 "%s %d: this process was started by a launcher (%s variables found), "
                 "whose ranks are processes already: use %s without mpirun or srun, or the "
                 "launcher without it",
                 key, ranks, env.source, key);
  GOSSAMER_CHECK(config.kernels.device == kernels::cpu::KernelsDevice::KERNELS_DEVICE_CPU,
                 "%s %d with kernels.device = cuda: ranks in one process run on the CPU "
                 "(one GPU per rank needs a launcher)",
                 key, ranks);
  GOSSAMER_CHECK(!start.control_comm, "--ranks: the run's control communicator is already set");
  interrupt_install();  // before the rank threads: they inherit its signal mask
  // Each rank's ops: kernels.threads, or cores / ranks (configure_cpu_kernels, per thread). No
  // pool limits how many compute at once: one made 4-64 ranks on 2 cores 8-100% slower than
  // the scheduler's time slices (docs/PERF.md, "Ranks in one process").
  const comm::SimConfig& sim = config.parallel.sim;
  std::shared_ptr<const comm::SimNetwork> network;
  run::RunConfig run_config = config;
  if (sim.enabled()) {
    network = std::make_shared<const comm::SimNetwork>(sim, ranks);
    if (sim.gflops > 0) {  // compute counted by the model (TrainingRun sets the clock's source)
      log_info(
          "simulated time: %s; compute = each rank's matrix-product and attention FLOPs at "
          "%g GFLOP/s (nothing else is charged)",
          network->describe().c_str(), sim.gflops);
    } else {
      // A rank's compute is its thread's CPU time, so its ops must run on that thread alone.
      GOSSAMER_CHECK(config.kernels.threads <= 1,
                     "kernels.threads = %d with parallel.sim.network = %s: simulated time "
                     "charges each rank the CPU time of its own thread, so its ops run on one "
                     "thread (set kernels.threads to 0 or 1, or parallel.sim.gflops above 0)",
                     config.kernels.threads, std::string(enum_name(sim.network)).c_str());
      run_config.kernels.threads = 1;
      log_info("simulated time: %s; compute = each rank's thread CPU time x %g",
               network->describe().c_str(), sim.compute_scale);
    }
  }
  const int cores = std::max(1, omp_get_num_procs());
  const int threads_per_rank =
      run_config.kernels.threads > 0 ? run_config.kernels.threads : std::max(1, cores / ranks);
  log_info(
      "%s %d: the ranks are threads of this process (the inprocess backend), %d "
      "thread(s) each on %d core(s)",
      key, ranks, threads_per_rank, cores);
  // Once, before any rank allocates: every rank checks against this figure.
  TrainStart shared = start;
  shared.host_memory = available_host_memory();
  check_run_fits_in_memory(run_config, ranks, ranks, kernels::cpu_ops(), *shared.host_memory);
  std::vector<std::unique_ptr<comm::Communicator>> comms =
      comm::make_inprocess_communicators(ranks, network, sim.compute_scale);
  std::vector<int> codes(size_t(ranks), 0);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      TrainStart mine = shared;
      auto comm =
          std::make_shared<std::unique_ptr<comm::Communicator>>(std::move(comms[size_t(r)]));
      mine.control_comm = [comm] { return std::move(*comm); };
      try {
        comm::SimClock* clock = (*comm)->sim_clock();
        if (clock && sim.gflops == 0) clock->attach_this_thread();
        codes[size_t(r)] = run_training(run_config, mine);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  for (int code : codes)
    if (code != 0) return code;
  return 0;
}

}  // namespace gossamer::train
