// Signal watcher thread: sigwait() on SIGINT/SIGTERM/SIGHUP blocked everywhere else.
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
  // A closed log pipe (`gossamer train ... 2>&1 | head`) must not end the training: writes to
  // it fail with EPIPE instead (core/log.h stops writing there).
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  GOSSAMER_CHECK(pthread_sigmask(SIG_BLOCK, &set, nullptr) == 0,
                 "cannot block SIGINT/SIGTERM/SIGHUP for the signal watcher");
  std::thread([set]() {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      char msg[200];
      if (g_signal.exchange(sig) != 0) {
        const int n = std::snprintf(msg, sizeof msg, "[error] second signal (%s): stopping now\n",
                                    interrupt_signal_name(sig));
        (void)!write(STDERR_FILENO, msg, size_t(n));
        _exit(128 + sig);
      }
      char who[32] = "";
      if (g_grace_s.load() > 0) std::snprintf(who, sizeof who, " rank %d", g_rank.load());
      const int n = std::snprintf(msg, sizeof msg,
                                  "[warn%s] %s received: finishing this step (an evaluation in "
                                  "progress is abandoned), then a checkpoint (again: stop now)\n",
                                  who, interrupt_signal_name(sig));
      (void)!write(STDERR_FILENO, msg, size_t(n));
      start_grace_timer(sig);
    }
  }).detach();
}

const char* interrupt_signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

bool interrupt_requested() {
  return g_signal.load() != 0;
}
int interrupt_signal() {
  return g_signal.load();
}

}  // namespace gossamer::train
