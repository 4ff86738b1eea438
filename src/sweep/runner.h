// `gossamer sweep`: runs every point of a sweep into OUT/POINT by launching this binary's
// `train` subcommand (plain, or under mpirun with N ranks), one point after another, or writes
// a Slurm array script (OUT/sweep.sbatch + OUT/points.txt) for the points still to run. Finished
// points are skipped; an unfinished point with a checkpoint resumes from it (--resume), one
// without starts from scratch; a point whose run directory holds a different config restarts
// from scratch, unless it is finished (then the sweep refuses to start). A failing point is
// logged and the others still run; the summary covers every point at the end.
#pragma once

#include <string>
#include <vector>

#include "sweep/spec.h"

namespace gossamer::sweep {

struct SweepOptions {
  bool dry_run = false;         // print the plan and the commands, write nothing
  bool summarize_only = false;  // only (re)write the summary of what is on disk
};

enum class SweepAction { SKIP, RUN, RESUME, RESTART };

struct SweepPlanItem {
  SweepAction action = SweepAction::RUN;
  std::string reason;  // for the log: "finished at step 4", "checkpoint at step 2", ...
  std::vector<std::string> train_argv;  // `gossamer train ...` (absolute binary path)
  std::vector<std::string> argv;        // the full launch command (mpirun ... for mpirun)
};

// Inspects every point's run directory and decides what to do with it. Throws (before anything
// runs) when a finished point's run directory holds a different config.
std::vector<SweepPlanItem> plan_sweep(const SweepSpec& spec, const std::string& self_exe);

// The Slurm array script for `items` (the points not skipped); `points_txt` is its task list.
std::string sweep_sbatch_script(const SweepSpec& spec, const std::string& points_txt,
                                size_t num_tasks, const std::string& workdir);

// Returns the process exit status: 0 all finished (or script written), 1 some point failed,
// 130 interrupted.
int run_sweep(const SweepSpec& spec, const SweepOptions& options);

}  // namespace gossamer::sweep
