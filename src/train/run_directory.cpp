// Claiming a run directory (see run_directory.h): inspection, the start rules, moving a run
// aside, and the flock that names its holder.
#include "train/run_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/output_guard.h"
#include "run/checkpoint.h"

namespace gossamer::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLockFile = ".lock";
// Files a sweep writes into a point's directory around its run (src/sweep/runner.cpp).
constexpr const char* kSweepFiles[] = {"train.log", "point.json", "sweep_status.json"};

std::string utc_stamp() {
  return utc_now("%Y%m%d-%H%M%S");
}

// Moves the run in `dir` to a new sibling RUN.replaced-TIMESTAMP[-N] and returns its path.
fs::path move_aside(const fs::path& dir) {
  const std::string base = dir.filename().string() + ".replaced-" + utc_stamp();
  fs::path aside = dir.parent_path() / base;
  for (int n = 2; fs::exists(aside); ++n)
    aside = dir.parent_path() / (base + "-" + std::to_string(n));
  std::error_code ec;
  fs::rename(dir, aside, ec);
  GOSSAMER_CHECK(!ec, "--overwrite: cannot move the existing run %s aside to %s: %s", dir.c_str(),
                 aside.c_str(), ec.message().c_str());
  io::fsync_directory(io::parent_directory(dir.string()));
  return aside;
}

// The pid of a writer's temporary ".NAME.tmp-PID" (io::AtomicFile, io::StagingDir), or -1.
int temporary_owner(const std::string& name) {
  const size_t at = name.rfind(".tmp-");
  if (!name.starts_with(".") || at == std::string::npos) return -1;
  const std::string digits = name.substr(at + 5);
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoi(digits);
}

// Removes the temporaries of writers that no longer run (killed mid-write) from `dir` and its
// checkpoints/. The caller holds the run directory's lock, so no training writes there now.
void remove_interrupted_writes(const fs::path& dir) {
  std::error_code ec;
  for (const fs::path& d : {dir, dir / "checkpoints"}) {
    if (!fs::is_directory(d, ec)) continue;
    std::vector<fs::path> stale;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      const int pid = temporary_owner(e.path().filename().string());
      if (pid > 0 && (pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH)))
        stale.push_back(e.path());
    }
    for (const fs::path& p : stale) {
      uintmax_t bytes = 0;
      if (fs::is_directory(p, ec)) {
        for (const auto& f : fs::recursive_directory_iterator(p, ec))
          if (f.is_regular_file(ec)) bytes += f.file_size(ec);
      } else {
        bytes = fs::file_size(p, ec);
      }
      if (ec) bytes = 0;  // the size is for the message only
      ec.clear();
      fs::remove_all(p, ec);
      log_warn("run directory: removed %s (%.1f MB), left by a write that was interrupted%s",
               p.c_str(), double(bytes) / 1e6, ec ? (": " + ec.message()).c_str() : "");
    }
  }
}

}  // namespace

RunDirectoryContents inspect_run_directory(const std::string& dir) {
  RunDirectoryContents c;
  std::error_code ec;
  const fs::path d(dir);
  if (!fs::exists(d, ec)) return c;
  c.exists = true;
  if (!fs::is_directory(d, ec)) {
    c.only_sweep_files = false;
    c.first_foreign = "(not a directory)";
    return c;
  }
  for (const auto& e : fs::directory_iterator(d, ec)) {
    const std::string name = e.path().filename().string();
    if (name == "metrics.jsonl" ||
        (name == "config.json" && io::is_run_config(e.path().string()))) {
      c.is_run = true;
    } else if (name == "checkpoints" && e.is_directory()) {
      c.is_run = true;
      for (const auto& ck : fs::directory_iterator(e.path(), ec))
        c.checkpoints += ck.path().filename().string().starts_with("step_");
    } else if (name != kLockFile && std::find(std::begin(kSweepFiles), std::end(kSweepFiles),
                                              name) == std::end(kSweepFiles)) {
      c.only_sweep_files = false;
      if (c.first_foreign.empty()) c.first_foreign = name;
    }
  }
  return c;
}

RunDirectoryLock::RunDirectoryLock(const std::string& dir) {
  const std::string path = (fs::path(dir) / kLockFile).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  GOSSAMER_CHECK(fd_ >= 0, "train.out_dir: cannot create %s: %s", path.c_str(),
                 std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::ifstream in(path);
    std::string holder((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    GOSSAMER_CHECK(err != EWOULDBLOCK,
                   "train.out_dir: %s is in use by another training (%s); wait for it to end, or "
                   "choose another --out",
                   dir.c_str(), holder.empty() ? "unknown process" : holder.c_str());
    fail("train.out_dir: cannot lock %s: %s", path.c_str(), std::strerror(err));
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string me =
      strprintf("pid %d on %s since %s UTC\n", int(::getpid()), host, utc_stamp().c_str());
  GOSSAMER_CHECK(
      ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, me.data(), me.size(), 0) == ssize_t(me.size()),
      "train.out_dir: cannot write %s: %s", path.c_str(), std::strerror(errno));
}

RunDirectoryLock::~RunDirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

void check_run_directory(const std::string& dir, RunStart start, const std::string& resume) {
  const RunDirectoryContents c = inspect_run_directory(dir);
  GOSSAMER_CHECK(!c.exists || c.first_foreign != "(not a directory)",
                 "train.out_dir: %s exists and is not a directory", dir.c_str());
  // What no training writes into: another run's checkpoints, a checkpoint, another command's
  // output (io/output_guard.h), whatever --overwrite says.
  const io::PathInspection what = io::inspect_path(dir);
  GOSSAMER_CHECK(what.enclosing_run.empty(),
                 "train.out_dir: %s is inside the checkpoints of the training run %s; refusing "
                 "to write there, even with --overwrite: choose a path outside it",
                 dir.c_str(), what.enclosing_run.c_str());
  GOSSAMER_CHECK(what.kind != io::PathKind::PATH_KIND_CHECKPOINT,
                 "train.out_dir: %s is a training checkpoint (%s), not a run directory; "
                 "refusing to write into it, even with --overwrite: resume from it with "
                 "--resume %s and a new --out",
                 dir.c_str(), what.found.c_str(), dir.c_str());
  GOSSAMER_CHECK(what.kind != io::PathKind::PATH_KIND_MADE_BY,
                 "train.out_dir: %s holds the output of gossamer %s (%s); refusing to write "
                 "into it, even with --overwrite: choose an empty or new directory",
                 dir.c_str(), what.made_by.empty() ? "(unknown)" : what.made_by.c_str(),
                 what.found.c_str());
  GOSSAMER_CHECK(c.is_run || c.only_sweep_files,
                 "train.out_dir: %s is not empty and holds no gossamer run (found %s); refusing to "
                 "write into it, even with --overwrite: choose an empty or new directory",
                 dir.c_str(), c.first_foreign.c_str());
  const std::string lock = (fs::path(dir) / kLockFile).string();
  if (c.exists && fs::exists(lock)) {
    RunDirectoryLock probe(dir);
  }  // a training holds it?
  if (!c.is_run) return;
  GOSSAMER_CHECK(start != RunStart::RUN_START_NEW,
                 "train.out_dir: %s already holds a run (%d checkpoint(s)); continue it with "
                 "--resume %s, or replace it with --overwrite (which moves it aside)",
                 dir.c_str(), c.checkpoints, dir.c_str());
  if (start == RunStart::RUN_START_RESUME && !resume.empty()) {
    const fs::path own = fs::weakly_canonical(dir), from = fs::weakly_canonical(resume);
    GOSSAMER_CHECK(from == own || from.parent_path() == own / "checkpoints",
                   "train.out_dir: %s holds another run than the checkpoint %s; resume into that "
                   "checkpoint's run directory or into a new --out",
                   dir.c_str(), resume.c_str());
  }
}

std::unique_ptr<RunDirectoryLock> claim_run_directory(const std::string& dir, RunStart start,
                                                      const std::string& resume) {
  check_run_directory(dir, start, resume);
  if (start == RunStart::RUN_START_OVERWRITE && inspect_run_directory(dir).is_run) {
    // The lock first: a run that is still training is never moved.
    { RunDirectoryLock probe(dir); }
    const fs::path aside = move_aside(fs::path(dir));
    log_warn("--overwrite: moved the existing run %s to %s", dir.c_str(), aside.c_str());
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  GOSSAMER_CHECK(!ec && fs::is_directory(dir), "train.out_dir: cannot create run directory %s: %s",
                 dir.c_str(), ec ? ec.message().c_str() : "not a directory");
  auto lock = std::make_unique<RunDirectoryLock>(dir);
  remove_interrupted_writes(dir);
  run::move_checkpoint_debris_aside(dir);
  return lock;
}

}  // namespace gossamer::train
