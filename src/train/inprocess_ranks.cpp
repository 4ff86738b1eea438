// run_training_ranks (see inprocess_ranks.h).
#include "train/inprocess_ranks.h"

#include <omp.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "comm/inprocess_communicator.h"
#include "comm/launch_env.h"
#include "core/error.h"
#include "core/log.h"
#include "train/interrupt.h"
#include "train/memory_check.h"

namespace gossamer::train {

namespace {

// `cores` slots; a rank computes holding one and lends it while it waits on communication.
class CorePool {
 public:
  explicit CorePool(int cores) : free_(cores) {}
  void acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return free_ > 0; });
    --free_;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int free_;
};

// One rank's slot of the pool, held from its start to its end but while it blocks.
class PoolSlot final : public comm::BlockingHook {
 public:
  explicit PoolSlot(CorePool* pool) : pool_(pool) {
    if (!pool_) return;
    pool_->acquire();
    comm::set_thread_blocking_hook(this);
  }
  ~PoolSlot() override {
    if (!pool_) return;
    comm::set_thread_blocking_hook(nullptr);
    pool_->release();
  }
  PoolSlot(const PoolSlot&) = delete;
  PoolSlot& operator=(const PoolSlot&) = delete;
  void release() override { pool_->release(); }
  void acquire() override { pool_->acquire(); }

 private:
  CorePool* pool_;
};

}  // namespace

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
  // Each rank's ops: kernels.threads, or cores / ranks (configure_cpu_kernels, per thread).
  const int cores = std::max(1, omp_get_num_procs());
  const int threads_per_rank =
      config.kernels.threads > 0 ? config.kernels.threads : std::max(1, cores / ranks);
  const int slots = std::max(1, cores / threads_per_rank);
  std::unique_ptr<CorePool> pool = ranks > slots ? std::make_unique<CorePool>(slots) : nullptr;
  log_info(
      "--ranks %d: the ranks are threads of this process (the inprocess backend), %d "
      "thread(s) each on %d core(s)%s",
      ranks, threads_per_rank, cores,
      pool ? strprintf("; at most %d rank(s) compute at once, a rank waiting on "
                       "communication lends its core(s)",
                       slots)
                 .c_str()
           : "");
  // Once, before any rank allocates: every rank checks against this figure.
  TrainStart shared = start;
  shared.host_memory = available_host_memory();
  check_run_fits_in_memory(config, ranks, ranks, kernels::cpu_ops(), *shared.host_memory);
  std::vector<std::unique_ptr<comm::Communicator>> comms =
      comm::make_inprocess_communicators(ranks);
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
        PoolSlot slot(pool.get());
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
