// The run directory of `gossamer train` (config.json, metrics.jsonl, checkpoints/): what may be
// started in a directory, and who owns it while a run writes there.
//   - A missing or empty directory, or one holding only what a sweep writes around a run
//     (train.log, point.json, sweep_status.json), takes a new run.
//   - A directory holding a run takes a run only to continue it (--resume) or to replace it
//     (--overwrite, which moves the old run aside to a sibling RUN.replaced-TIMESTAMP and says
//     so); a new run never truncates another run's metrics or deletes its checkpoints.
//   - Any other non-empty directory (an HF export, a home directory) is refused, always.
//   - Leftovers of writes interrupted by a crash (".NAME.tmp-PID" files and checkpoint staging
//     directories of a process that no longer runs) are removed, with a warning naming each,
//     once the lock is taken; so are directories step_N that are no checkpoint of step N (moved
//     aside, run/checkpoint.h).
//   - While a run trains, the directory's .lock is held (flock) and names the holder's PID;
//     a second training into it is refused naming that PID. Readers (eval, generate,
//     export-hf) take no lock: checkpoint directories are complete when they appear and the
//     newest train.keep_checkpoints are never deleted.
// Invariant: nothing is written into the directory before claim_run_directory() returned.
#pragma once

#include <memory>
#include <string>

namespace gossamer::train {

enum class RunStart {
  RUN_START_NEW,        // a fresh run (no --resume, no --overwrite)
  RUN_START_RESUME,     // --resume: continue the run in the directory (or start it there)
  RUN_START_OVERWRITE,  // --overwrite: move an existing run aside, then start fresh
};

// What a directory holds, for the checks and their messages.
struct RunDirectoryContents {
  bool exists = false;
  bool is_run = false;           // config.json of a run, metrics.jsonl or checkpoints/
  bool only_sweep_files = true;  // empty, or only the files a sweep writes around a run
  int checkpoints = 0;
  std::string first_foreign;  // a name that belongs to neither a run nor a sweep
};
RunDirectoryContents inspect_run_directory(const std::string& dir);

// Holds the directory's lock for the lifetime of the object.
class RunDirectoryLock {
 public:
  explicit RunDirectoryLock(const std::string& dir);  // throws naming the holder's PID
  ~RunDirectoryLock();
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

// Checks that a run may start in `dir` as `start` says (see the rules above), creates it,
// moves an existing run aside for RUN_START_OVERWRITE, takes the lock and removes the leftovers
// of interrupted writes. Throws
// gossamer::Error naming train.out_dir, the directory and what to do instead. Call on the one
// rank that writes the run directory, before anything is written.
// resume: what a RUN_START_RESUME continues from (--resume: a run directory or a checkpoint);
// when `dir` holds a run, it must be that run or one of its checkpoints (continuing one run in
// another's directory would truncate its metrics).
std::unique_ptr<RunDirectoryLock> claim_run_directory(const std::string& dir, RunStart start,
                                                      const std::string& resume = "");
// The same checks without writing anything (and without taking the lock, only testing it), so a
// run can fail on them before it spends time on loading.
void check_run_directory(const std::string& dir, RunStart start, const std::string& resume = "");

}  // namespace gossamer::train
