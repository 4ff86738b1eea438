// run_training_ranks (see inprocess_ranks.h).
#include "train/inprocess_ranks.h"

#include <exception>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "comm/inprocess_communicator.h"
#include "comm/launch_env.h"
#include "core/error.h"
#include "core/log.h"
#include "train/interrupt.h"

namespace gossamer::train {

int run_training_ranks(const run::RunConfig& config, const TrainStart& start, int ranks) {
  GOSSAMER_CHECK(ranks >= 1, "--ranks %d: the number of ranks must be at least 1", ranks);
  const comm::LaunchEnv env = comm::detect_launch_env();
  GOSSAMER_CHECK(std::string_view(env.source) == "none",
                 "--ranks %d: this process was started by a launcher (%s variables found), "
                 "whose ranks are processes already: use --ranks without mpirun or srun, or the "
                 "launcher without --ranks",
                 ranks, env.source);
  GOSSAMER_CHECK(config.kernels.device == kernels::cpu::KernelsDevice::KERNELS_DEVICE_CPU,
                 "--ranks %d with kernels.device = cuda: ranks in one process run on the CPU "
                 "(one GPU per rank needs a launcher)",
                 ranks);
  GOSSAMER_CHECK(!start.control_comm, "--ranks: the run's control communicator is already set");
  interrupt_install();  // before the rank threads: they inherit its signal mask
  log_info("--ranks %d: the ranks are threads of this process (the inprocess backend)", ranks);
  std::vector<std::unique_ptr<comm::Communicator>> comms =
      comm::make_inprocess_communicators(ranks);
  std::vector<int> codes(size_t(ranks), 0);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      TrainStart mine = start;
      auto comm =
          std::make_shared<std::unique_ptr<comm::Communicator>>(std::move(comms[size_t(r)]));
      mine.control_comm = [comm] { return std::move(*comm); };
      try {
        codes[size_t(r)] = run_training(config, mine);
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
