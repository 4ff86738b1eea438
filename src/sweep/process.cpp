// posix_spawn-based child processes and signal forwarding for the sweep (see process.h).
// The only process-wide state is the pending-signal word written by the handler (an atomic
// int, async-signal-safe) and the saved dispositions, both owned by SweepSignalGuard.
#include "sweep/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "core/error.h"

extern char** environ;

namespace gossamer::sweep {

namespace fs = std::filesystem;

namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<int> g_pending{0};        // a signal not yet forwarded (0: none)
std::atomic<bool> g_received{false};  // any signal since the guard was installed
std::atomic<int> g_first{0};          // the first signal since the guard was installed
struct sigaction g_saved[3];

void on_signal(int sig) {
  int none = 0;
  g_first.compare_exchange_strong(none, sig);
  g_pending.store(sig);
  g_received.store(true);
}

}  // namespace

std::string ProcessExit::describe() const {
  if (signal != 0) return strprintf("killed by signal %d (%s)", signal, strsignal(signal));
  return strprintf("exit %d", code);
}

SweepSignalGuard::SweepSignalGuard() {
  g_pending.store(0);
  g_received.store(false);
  g_first.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: sleeps return early
  for (size_t i = 0; i < 3; ++i) sigaction(kForwarded[i], &sa, &g_saved[i]);
}

SweepSignalGuard::~SweepSignalGuard() {
  for (size_t i = 0; i < 3; ++i) sigaction(kForwarded[i], &g_saved[i], nullptr);
}

bool SweepSignalGuard::interrupted() {
  return g_received.load();
}

int SweepSignalGuard::first_signal() {
  return g_first.load();
}

pid_t spawn_process(const std::vector<std::string>& argv, const std::string& log_path,
                    bool new_group) {
  GOSSAMER_CHECK(!argv.empty(), "spawn_process: empty command");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (!log_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : kForwarded) sigaddset(&defaults, s);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  if (new_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);

  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  GOSSAMER_CHECK(rc == 0, "cannot start %s: %s", argv[0].c_str(), std::strerror(rc));
  return pid;
}

ProcessExit wait_process(pid_t pid) {
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      ProcessExit e;
      if (WIFSIGNALED(status))
        e.signal = WTERMSIG(status);
      else
        e.code = WEXITSTATUS(status);
      return e;
    }
    if (r < 0 && errno != EINTR) fail("waiting for process %d: %s", int(pid), std::strerror(errno));
    if (const int sig = g_pending.exchange(0); sig != 0) {
      // The child leads its own group: signal all of it (mpirun forwards to its ranks).
      if (kill(-pid, sig) != 0) kill(pid, sig);
    }
    const timespec ts{0, 50 * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
}

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return access(name.c_str(), X_OK) == 0 ? fs::absolute(name).string() : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(begin, end - begin);
    begin = end + 1;
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0)
      return fs::absolute(candidate).string();
  }
  return "";
}

std::string self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  GOSSAMER_CHECK(!ec, "cannot resolve /proc/self/exe: %s", ec.message().c_str());
  return p.string();
}

std::string shell_quote(const std::string& word) {
  bool safe = !word.empty();
  for (char c : word) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::strchr("._-/=,+:@%", c) != nullptr;
    safe = safe && ok;
  }
  if (safe) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

}  // namespace gossamer::sweep
