// Signal watcher thread: sigwait() on SIGINT/SIGTERM blocked everywhere else.
#include "train/interrupt.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include "core/error.h"

namespace gossamer::train {

namespace {
std::atomic<int> g_signal{0};
}  // namespace

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
