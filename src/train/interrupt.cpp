// Signal watcher thread: sigwait() on SIGINT/SIGTERM blocked everywhere else.
#include "train/interrupt.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "core/error.h"

namespace gossamer::train {

namespace {
std::atomic<int> g_signal{0};
std::atomic<double> g_grace_s{0};
std::atomic<int> g_rank{0};
std::atomic<int64_t> g_step{0};

void start_grace_timer(int sig) {
  const double grace = g_grace_s.load();
  if (grace <= 0) return;
  std::thread([sig, grace]() {
    std::this_thread::sleep_for(std::chrono::duration<double>(grace));
    char msg[200];
    const int n = std::snprintf(msg, sizeof msg,
                                "[error rank %d] no clean stop within %.0f s of signal %d "
                                "(during step %lld; a peer rank probably died): exiting\n",
                                g_rank.load(), grace, sig, (long long)g_step.load());
    (void)!write(STDERR_FILENO, msg, size_t(n));
    _exit(128 + sig);
  }).detach();
}
}  // namespace

void interrupt_set_grace(double seconds, int rank) {
  g_grace_s.store(seconds);
  g_rank.store(rank);
}
void interrupt_note_step(int64_t step) {
  g_step.store(step);
}

void interrupt_install() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  GOSSAMER_CHECK(pthread_sigmask(SIG_BLOCK, &set, nullptr) == 0,
                 "cannot block SIGINT/SIGTERM for the signal watcher");
  std::thread([set]() {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (g_signal.exchange(sig) != 0) {
        static const char msg[] = "[error] second signal: stopping now\n";
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        _exit(128 + sig);
      }
      static const char msg[] =
          "[warn] signal received: finishing this step, then a checkpoint (again: stop now)\n";
      (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
      start_grace_timer(sig);
    }
  }).detach();
}

bool interrupt_requested() {
  return g_signal.load() != 0;
}
int interrupt_signal() {
  return g_signal.load();
}

}  // namespace gossamer::train
