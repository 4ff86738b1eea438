// Implementation of the output guard (see output_guard.h): what a path holds, and the refusals
// every writing command shares.
#include "io/output_guard.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"

namespace gossamer::io {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLockFile = ".lock";

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// The command a marker file names, or "" when it is unreadable or not ours.
std::string marker_command(const fs::path& marker) {
  try {
    const nlohmann::json j = read_json_object(marker.string(), "output marker");
    return j.contains("made_by") && j["made_by"].is_string() ? j["made_by"].get<std::string>() : "";
  } catch (const Error&) {
    return "";
  }
}

int count_step_dirs(const fs::path& checkpoints) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoints, ec))
    n += e.path().filename().string().starts_with("step_");
  return n;
}

// What makes `dir` a run, or nothing.
std::vector<std::string> run_evidence(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  if (fs::is_regular_file(dir / "config.json", ec) && is_run_config((dir / "config.json").string()))
    found.push_back("config.json of a run");
  if (fs::exists(dir / "metrics.jsonl", ec)) found.push_back("metrics.jsonl");
  if (fs::is_directory(dir / "checkpoints", ec))
    found.push_back(
        strprintf("checkpoints/ with %d checkpoint(s)", count_step_dirs(dir / "checkpoints")));
  return found;
}

// The run whose checkpoints/ holds `p` (or is `p`), walking up from p.
std::string enclosing_run_of(const fs::path& p) {
  for (fs::path a = p; !a.empty() && a != a.root_path(); a = a.parent_path()) {
    if (a.filename() == "checkpoints" && is_run_directory(a.parent_path().string()))
      return a.parent_path().string();
  }
  return "";
}

// Absolute, symbolic links resolved as far as the path exists.
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) p = fs::absolute(path, ec).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();  // "out/" -> "out"
  return p;
}

}  // namespace

bool is_run_config(const std::string& file) {
  try {  // bounded: a config.json that is a FIFO or huge is simply not a run's
    const nlohmann::json j = read_json_object(file, "config.json");
    return j.contains("model") && j.contains("train") && j.contains("optimizer");
  } catch (const Error&) {
    return false;
  }
}

bool is_run_directory(const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && !run_evidence(dir).empty();
}

std::string lock_holder(const std::string& dir) {
  const std::string path = (fs::path(dir) / kLockFile).string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  // A shared lock is refused while a training holds its exclusive one; granted, it is let go.
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  if (!held) return "";
  std::ifstream in(path);
  std::string holder((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  return holder.empty() ? "a process that has not written its name yet" : holder;
}

PathInspection inspect_path(const std::string& path) {
  PathInspection r;
  const fs::path p = resolved(path);
  r.enclosing_run = enclosing_run_of(p);
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (!fs::exists(st)) return r;
  if (!fs::is_directory(st)) {
    r.kind = PathKind::PATH_KIND_NOT_A_DIRECTORY;
    r.found = "a file";
    return r;
  }
  r.lock_holder = lock_holder(p.string());
  if (const std::vector<std::string> run = run_evidence(p); !run.empty()) {
    r.kind = PathKind::PATH_KIND_RUN;
    r.found = join(run);
    return r;
  }
  if (fs::exists(p / kOutputMarker, ec)) {
    r.kind = PathKind::PATH_KIND_MADE_BY;
    r.made_by = marker_command(p / kOutputMarker);
    r.found = kOutputMarker + std::string(r.made_by.empty() ? " (unreadable)" : " of " + r.made_by);
    return r;
  }
  if (fs::exists(p / "trainer.json", ec)) {
    r.kind = PathKind::PATH_KIND_CHECKPOINT;
    std::vector<std::string> files;
    for (const char* f : {"trainer.json", "model.safetensors", "optimizer.safetensors"})
      if (fs::exists(p / f, ec)) files.push_back(f);
    r.found = join(files);
    return r;
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(p, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    r.kind = PathKind::PATH_KIND_EMPTY;
    return r;
  }
  r.kind = PathKind::PATH_KIND_OTHER;
  if (names.size() > 3) names.resize(3), names.push_back("...");
  r.found = join(names);
  return r;
}

void refuse_training_paths(const std::string& path, const std::string& what) {
  const PathInspection r = inspect_path(path);
  GOSSAMER_CHECK(r.lock_holder.empty(),
                 "%s: %s is in use by a training (%s); refusing to write there: choose another "
                 "path",
                 what.c_str(), path.c_str(), r.lock_holder.c_str());
  GOSSAMER_CHECK(r.kind != PathKind::PATH_KIND_RUN,
                 "%s: %s holds a training run (%s); refusing to write there: choose another path",
                 what.c_str(), path.c_str(), r.found.c_str());
  GOSSAMER_CHECK(r.enclosing_run.empty(),
                 "%s: %s is inside the checkpoints of the training run %s; refusing to write "
                 "there: choose a path outside it",
                 what.c_str(), path.c_str(), r.enclosing_run.c_str());
  GOSSAMER_CHECK(r.kind != PathKind::PATH_KIND_CHECKPOINT,
                 "%s: %s is a training checkpoint (%s); refusing to write there: choose another "
                 "path",
                 what.c_str(), path.c_str(), r.found.c_str());
}

void check_replaceable(const std::string& path, const std::string& command, bool force,
                       const std::string& what) {
  refuse_training_paths(path, what);
  const PathInspection r = inspect_path(path);
  switch (r.kind) {
    case PathKind::PATH_KIND_ABSENT:
    case PathKind::PATH_KIND_EMPTY:
      return;
    case PathKind::PATH_KIND_NOT_A_DIRECTORY:
      fail("%s: %s exists and is not a directory", what.c_str(), path.c_str());
    case PathKind::PATH_KIND_MADE_BY:
      GOSSAMER_CHECK(r.made_by == command,
                     "%s: %s was made by %s, not %s; refusing to replace it, even with --force: "
                     "choose another path",
                     what.c_str(), path.c_str(),
                     r.made_by.empty() ? "an unknown command" : ("gossamer " + r.made_by).c_str(),
                     command.c_str());
      GOSSAMER_CHECK(force,
                     "%s: %s holds an earlier output of %s; use --force to replace it, or choose "
                     "another path",
                     what.c_str(), path.c_str(), command.c_str());
      return;
    default:
      fail(
          "%s: %s is not empty (%s) and was not made by gossamer %s; refusing to replace it, "
          "even with --force: choose an empty or new directory",
          what.c_str(), path.c_str(), r.found.c_str(), command.c_str());
  }
}

std::string output_marker(const std::string& command) {
  return nlohmann::json{{"made_by", command}, {"format_version", 1}}.dump() + "\n";
}

}  // namespace gossamer::io
