// Signal handler: async-signal-safe flag; the second signal restores the default action.
#include "train/interrupt.h"

#include <csignal>

namespace gossamer::train {

namespace {
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) {
  if (g_signal != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
}
}  // namespace

void interrupt_install() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}
bool interrupt_requested() { return g_signal != 0; }
int interrupt_signal() { return g_signal; }

}  // namespace gossamer::train
