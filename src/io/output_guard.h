// The one "what does this path hold?" check that every command writing a directory makes before
// it touches anything (train's --out, export-hf, import-hf, prep's --output, sweep's --out).
// A training run, a training checkpoint, a path inside a run's checkpoints/ and a directory whose
// .lock a live training holds are recognised and refused, naming what was found; a command's own
// earlier output is recognised by its marker file, .gossamer-output ({"made_by": "export-hf"}),
// and --force replaces only a directory whose marker names the same command.
// Invariant: no command replaces or writes into a run or a checkpoint it did not make; the only
// writers of a run directory are the training that holds its lock and train --overwrite, which
// moves a run aside whole (train/run_directory.h).
#pragma once

#include <string>

namespace gossamer::io {

// The marker a command leaves in a directory it made (written by io::StagingDir).
constexpr const char* kOutputMarker = ".gossamer-output";

enum class PathKind {
  PATH_KIND_ABSENT,
  PATH_KIND_NOT_A_DIRECTORY,
  PATH_KIND_EMPTY,
  PATH_KIND_RUN,         // a training run: config.json of a run, metrics.jsonl or checkpoints/
  PATH_KIND_CHECKPOINT,  // holds trainer.json and no marker: a training checkpoint
  PATH_KIND_MADE_BY,     // holds a marker: the output of the command it names
  PATH_KIND_OTHER,       // anything else (an HF download, a home directory)
};

struct PathInspection {
  PathKind kind = PathKind::PATH_KIND_ABSENT;
  std::string made_by;        // PATH_KIND_MADE_BY: the command named by the marker
  std::string lock_holder;    // a live process holds PATH/.lock: its line ("pid 12 on host ...")
  std::string enclosing_run;  // the run whose checkpoints/ this path is in (or is), else empty
  std::string found;          // what was found, for messages ("config.json, metrics.jsonl")
};

// Inspects `path` (symbolic links followed, so a link to a run is a run).
PathInspection inspect_path(const std::string& path);

// Whether `file` is the config.json of a run (an object with our model, train and optimizer
// sections; an HF export's config.json is not).
bool is_run_config(const std::string& file);
// Whether `dir` holds a training run (config.json of a run, metrics.jsonl or checkpoints/).
bool is_run_directory(const std::string& dir);
// The line a live process wrote into dir/.lock while it holds the lock, else empty.
std::string lock_holder(const std::string& dir);

// For commands that write files into a directory (prep's shards, a sweep's directory): throws
// naming `what` and the path when it is a run, a checkpoint, inside a run's checkpoints/ or
// locked by a live training.
void refuse_training_paths(const std::string& path, const std::string& what);

// For commands that create or replace a whole directory (export-hf, import-hf): on top of
// refuse_training_paths, `path` must be absent or empty, or (force) hold the marker of
// `command`. Throws naming `what`, the path, what it holds and what to do.
void check_replaceable(const std::string& path, const std::string& command, bool force,
                       const std::string& what);

// The marker file's content for `command`.
std::string output_marker(const std::string& command);

}  // namespace gossamer::io
