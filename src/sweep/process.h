// Child processes for `gossamer sweep`: start a command (PATH search) with stdin from /dev/null
// and stdout+stderr appended to a log file, in its own process group, and wait for it while
// forwarding SIGINT/SIGTERM/SIGHUP that reach the sweep to that group exactly once each. A
// terminal's Ctrl-C therefore reaches a training run once (the trainer treats a second signal
// as "stop now"), whether it was typed or sent to the sweep's pid.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gossamer::sweep {

struct ProcessExit {
  int code = 0;    // exit status (when signal == 0)
  int signal = 0;  // the signal that killed it, or 0
  bool ok() const { return signal == 0 && code == 0; }
  std::string describe() const;  // "exit 1", "killed by signal 9"
};

// Installs the forwarding handlers (until the guard is destroyed). Signals arriving while no
// child runs are remembered and reported by interrupted().
class SweepSignalGuard {
 public:
  SweepSignalGuard();
  ~SweepSignalGuard();
  SweepSignalGuard(const SweepSignalGuard&) = delete;
  SweepSignalGuard& operator=(const SweepSignalGuard&) = delete;
  // A signal was received since the guard was installed.
  static bool interrupted();
  // The first signal received since the guard was installed (0: none).
  static int first_signal();
};

// Starts argv (argv[0] searched in PATH). log_path: append stdout and stderr there ("": inherit).
// new_group: the child leads its own process group (signals are forwarded by wait_process).
// Throws gossamer::Error naming the command when it cannot be started.
pid_t spawn_process(const std::vector<std::string>& argv, const std::string& log_path,
                    bool new_group);
// Waits for the child; with a SweepSignalGuard installed, forwards signals to its group.
ProcessExit wait_process(pid_t pid);

// The absolute path of an executable found in PATH, or "".
std::string find_in_path(const std::string& name);
// The running binary's absolute path (/proc/self/exe).
std::string self_executable();
// A word quoted for bash ('...' unless it only has safe characters).
std::string shell_quote(const std::string& word);
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace gossamer::sweep
