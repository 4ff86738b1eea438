// Planning and launching sweep points (see runner.h). Points run one after another; each
// child writes its output to OUT/POINT/train.log and its outcome is recorded in
// OUT/POINT/sweep_status.json (read back by the summary to tell "failed" from "incomplete").
// Nothing is written before every point's config has been validated and planned.
#include "sweep/runner.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/output_guard.h"
#include "sweep/process.h"
#include "sweep/summary.h"

namespace gossamer::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// scripts/mpirun.sh's malloc settings (docs/COMM.md).
constexpr const char* kGlibcTunables =
    "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=2147483647:glibc.malloc.trim_threshold="
    "2147483647";

const char* action_name(SweepAction a) {
  switch (a) {
    case SweepAction::SKIP:
      return "skip";
    case SweepAction::RUN:
      return "run";
    case SweepAction::RESUME:
      return "resume";
    case SweepAction::RESTART:
      return "restart";
  }
  return "?";
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}

// The launch command around `gossamer train ...` for mpirun and (as srun would run it) slurm.
std::vector<std::string> wrap(const SweepLauncher& l, const std::vector<std::string>& train) {
  std::vector<std::string> argv;
  const std::string np = std::to_string(l.ranks);
  if (l.kind == SweepLauncherKind::MPIRUN) {
    // The flags of scripts/mpirun.sh.
    const char* omp = std::getenv("OMP_NUM_THREADS");
    const int threads = std::max(1, available_cores() / l.ranks);
    argv = {"mpirun"};
    if (geteuid() == 0) argv.push_back("--allow-run-as-root");
    for (const char* a : {"--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader"})
      argv.push_back(a);
    argv.push_back("-x");
    argv.push_back(std::string("GLIBC_TUNABLES=") + kGlibcTunables);
    argv.push_back("-x");
    argv.push_back("OMP_NUM_THREADS=" + (omp && *omp ? std::string(omp) : std::to_string(threads)));
    argv.push_back("-np");
    argv.push_back(np);
  } else if (l.kind == SweepLauncherKind::SLURM) {
    argv = {"srun", "--mpi=pmix", "--kill-on-bad-exit=1", "--cpu-bind=none", "-n", np};
  }
  argv.insert(argv.end(), l.args.begin(), l.args.end());
  argv.insert(argv.end(), train.begin(), train.end());
  return argv;
}

void write_text(const fs::path& path, const std::string& text) {
  io::write_file_atomically(path.string(), text);
}

std::string now_utc() {
  return utc_now("%Y-%m-%dT%H:%M:%SZ");
}

std::vector<std::string> tail_lines(const fs::path& path, size_t n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > n) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

std::string format_seconds(double s) {
  if (s < 120) return strprintf("%.1f s", s);
  return strprintf("%.1f min", s / 60);
}

// Fails, before anything runs, when points would be rerun over runs they do not match:
// finished with another config (`stale`) or run past train.steps (`longer`, which a restart
// would delete).
void refuse_unsafe_points(const SweepSpec& spec, const std::vector<std::string>& stale,
                          const std::vector<std::string>& longer) {
  if (!stale.empty())
    fail(
        "%s: finished point(s) in %s were run with another config: %s. Delete their "
        "directories to rerun them, or choose another --out",
        spec.source.c_str(), spec.out.c_str(), join(stale, "; ").c_str());
  if (!longer.empty())
    fail(
        "%s: point(s) in %s have run past the train.steps asked for now: %s. Running them "
        "from scratch would delete the longer run: raise train.steps to resume them, delete "
        "their directories to rerun them, or choose another --out",
        spec.source.c_str(), spec.out.c_str(), join(longer, "; ").c_str());
}

}  // namespace

std::vector<SweepPlanItem> plan_sweep(const SweepSpec& spec, const std::string& self_exe) {
  const bool absolute = spec.launcher.kind == SweepLauncherKind::SLURM;
  std::vector<SweepPlanItem> plan;
  std::vector<std::string> stale, longer;
  for (const SweepPoint& p : spec.points) {
    const PointState st = inspect_point(p, {});
    const std::string dir = absolute ? fs::absolute(p.dir).lexically_normal().string() : p.dir;
    SweepPlanItem item;
    item.train_argv = {self_exe, "train", "-c", (fs::path(dir) / "point.json").string(),
                       "--out",  dir};
    if (st.finished) {
      if (!st.config_diff.empty()) {
        stale.push_back(p.name + " (" + st.config_diff + ")");
        continue;
      }
      item.action = SweepAction::SKIP;
      item.reason = strprintf("finished at step %lld", (long long)p.steps);
    } else if (!st.definition_diff.empty()) {
      item.action = SweepAction::RESTART;
      item.reason = "unfinished run of another config, " + st.definition_diff;
    } else if (st.checkpoint_step >= 0 && st.checkpoint_step < p.steps) {
      // Keys a resume may change (train.steps, evaluation, logging) continue the run: a sweep
      // made longer resumes its points from their last checkpoints.
      item.action = SweepAction::RESUME;
      item.reason = strprintf("checkpoint at step %lld of %lld", (long long)st.checkpoint_step,
                              (long long)p.steps);
      if (!st.config_diff.empty()) item.reason += "; changed, a resume may: " + st.config_diff;
      item.train_argv.push_back("--resume");
      item.train_argv.push_back(dir);
    } else if (st.checkpoint_step > p.steps) {
      // Restarting would delete a longer run than the one asked for: refuse, naming it.
      longer.push_back(strprintf("%s (checkpoint at step %lld, train.steps %lld now)",
                                 p.name.c_str(), (long long)st.checkpoint_step,
                                 (long long)p.steps));
      continue;
    } else if (st.checkpoint_step >= 0) {
      item.action = SweepAction::RESTART;
      item.reason =
          strprintf("checkpoint at step %lld but metrics.jsonl lacks step %lld: from scratch",
                    (long long)st.checkpoint_step, (long long)p.steps);
    } else if (st.has_run) {
      // Killed before its first checkpoint: the directory holds a run, which train refuses to
      // overwrite, so its files go first.
      item.action = SweepAction::RESTART;
      item.reason = "unfinished, no checkpoint: from scratch";
    } else {
      item.action = SweepAction::RUN;
      item.reason = "new";
    }
    item.argv = wrap(spec.launcher, item.train_argv);
    plan.push_back(std::move(item));
  }
  refuse_unsafe_points(spec, stale, longer);
  return plan;
}

std::string sweep_sbatch_script(const SweepSpec& spec, const std::string& points_txt,
                                size_t num_tasks, const std::string& workdir) {
  const std::string out = fs::absolute(spec.out).lexically_normal().string();
  const std::string np = std::to_string(spec.launcher.ranks);
  std::string srun = "srun --mpi=pmix --kill-on-bad-exit=1 --cpu-bind=none -n " + np;
  for (const auto& a : spec.launcher.args) srun += " " + shell_quote(a);
  std::string s;
  s += "#!/bin/bash\n";
  s += "# Written by `gossamer sweep " + spec.source + "`: a Slurm array job, one task per point\n";
  s += strprintf(
      "# still to run (%zu of %zu; finished points are not in it). Task i runs line i+1\n",
      num_tasks, spec.points.size());
  s += "# of points.txt (\"POINT COMMAND...\") with srun on " + np +
       " task(s) and appends its output to\n# " + out + "/POINT/train.log.\n";
  s += "# Submit: sbatch " + out + "/sweep.sbatch\n";
  s += "# Afterwards `gossamer sweep " + spec.source + " --out " + out +
       "` skips the finished points,\n# resumes or reruns the others and writes the summary.\n";
  s += "#SBATCH --job-name=gossamer-sweep-" + spec.name + "\n";
  s += strprintf("#SBATCH --array=0-%zu\n", num_tasks - 1);
  s += "#SBATCH --ntasks=" + np + "\n";
  s += "#SBATCH --chdir=" + workdir + "\n";
  s += "#SBATCH --output=" + out + "/slurm-%A_%a.out\n";
  for (const auto& a : spec.launcher.sbatch) s += "#SBATCH " + a + "\n";
  s += "set -euo pipefail\n";
  s += std::string("export GLIBC_TUNABLES=\"${GLIBC_TUNABLES:-") + kGlibcTunables + "}\"\n";
  s += "task=\"${SLURM_ARRAY_TASK_ID:?submit this script with sbatch (an array job)}\"\n";
  s += "line=\"$(sed -n \"$((task + 1))p\" " + shell_quote(points_txt) + ")\"\n";
  s += "[[ -n \"$line\" ]] || { echo \"sweep.sbatch: no line $((task + 1)) in " + points_txt +
       "\" >&2; exit 1; }\n";
  s += "read -r point cmd <<<\"$line\"\n";
  s += "echo \"sweep.sbatch: task $task: point $point on $(hostname)\"\n";
  s += "eval \"" + srun + " $cmd\" >>" + shell_quote(out) + "\"/$point/train.log\" 2>&1\n";
  return s;
}

namespace {

size_t count_to_run(const std::vector<SweepPlanItem>& plan) {
  size_t n = 0;
  for (const auto& item : plan) n += item.action != SweepAction::SKIP;
  return n;
}

void check_mpirun_found(const SweepSpec& spec) {
  if (spec.launcher.kind == SweepLauncherKind::MPIRUN)
    GOSSAMER_CHECK(!find_in_path("mpirun").empty(),
                   "%s: launcher.kind \"mpirun\": mpirun not found in PATH (Open MPI; "
                   "scripts/install-deps.sh installs it)",
                   spec.source.c_str());
}

// #SBATCH lines cannot quote, so the Slurm paths must not contain whitespace.
void check_slurm_paths(const SweepSpec& spec) {
  const std::string out = fs::absolute(spec.out).string(), cwd = fs::current_path().string();
  GOSSAMER_CHECK(out.find_first_of(" \t\n") == std::string::npos &&
                     cwd.find_first_of(" \t\n") == std::string::npos,
                 "launcher.kind \"slurm\": the output directory %s and the working directory "
                 "%s must not contain whitespace (#SBATCH lines cannot quote)",
                 out.c_str(), cwd.c_str());
}

// " with N rank(s)" unless the launcher is plain.
std::string ranks_text(const SweepLauncher& l) {
  return l.kind == SweepLauncherKind::PLAIN ? "" : strprintf(" with %d rank(s)", l.ranks);
}

// --dry-run: the plan and every launch command on stdout.
void print_dry_run(const SweepSpec& spec, const std::vector<SweepPlanItem>& plan, size_t to_run) {
  const SweepLauncher& l = spec.launcher;
  std::printf("sweep %s: %zu point(s), %zu to run; launcher %s%s; out %s\n", spec.name.c_str(),
              spec.points.size(), to_run, sweep_launcher_name(l.kind), ranks_text(l).c_str(),
              spec.out.c_str());
  for (size_t i = 0; i < plan.size(); ++i) {
    std::printf("%s: %s (%s)\n", spec.points[i].name.c_str(), action_name(plan[i].action),
                plan[i].reason.c_str());
    if (plan[i].action != SweepAction::SKIP)
      std::printf("  %s\n", shell_join(plan[i].argv).c_str());
  }
  if (l.kind == SweepLauncherKind::SLURM && to_run > 0)
    std::printf("would write %s/sweep.sbatch (array 0-%zu) and %s/points.txt\n", spec.out.c_str(),
                to_run - 1, spec.out.c_str());
}

// Creates OUT and every point directory to run, clears what a restart replaces, and writes each
// one's resolved config (point.json), before any launch.
void prepare_point_dirs(const SweepSpec& spec, const std::vector<SweepPlanItem>& plan) {
  io::refuse_training_paths(spec.out, "sweep: out");
  for (size_t i = 0; i < plan.size(); ++i) {  // before anything is removed
    if (plan[i].action == SweepAction::SKIP) continue;
    const std::string holder = io::lock_holder(spec.points[i].dir);
    GOSSAMER_CHECK(holder.empty(),
                   "sweep: point %s: its run directory %s is in use by a training (%s); wait for "
                   "it to end (another sweep over the same directory?)",
                   spec.points[i].name.c_str(), spec.points[i].dir.c_str(), holder.c_str());
  }
  std::error_code ec;
  fs::create_directories(spec.out, ec);
  GOSSAMER_CHECK(!ec && fs::is_directory(spec.out), "cannot create sweep directory %s: %s",
                 spec.out.c_str(), ec ? ec.message().c_str() : "not a directory");
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].action == SweepAction::SKIP) continue;
    const fs::path dir = spec.points[i].dir;
    fs::create_directories(dir, ec);
    GOSSAMER_CHECK(!ec, "cannot create %s: %s", dir.string().c_str(), ec.message().c_str());
    if (plan[i].action == SweepAction::RESTART)
      for (const char* f : {"checkpoints", "metrics.jsonl", "config.json", "sweep_status.json"})
        fs::remove_all(dir / f, ec);
    write_text(dir / "point.json", spec.points[i].config.dump(2) + "\n");
  }
}

// The slurm launcher: writes OUT/points.txt and OUT/sweep.sbatch for the points to run (removes
// them when none is left) and the summary of what is on disk. Returns the exit status (0).
int write_slurm_job(const SweepSpec& spec, const std::vector<SweepPlanItem>& plan, size_t to_run) {
  for (size_t i = 0; i < plan.size(); ++i)
    log_info("sweep: %s: %s (%s)", spec.points[i].name.c_str(),
             plan[i].action == SweepAction::SKIP ? "skipped" : action_name(plan[i].action),
             plan[i].reason.c_str());
  const fs::path out = fs::absolute(spec.out).lexically_normal();
  const fs::path sbatch = out / "sweep.sbatch", points_txt = out / "points.txt";
  std::error_code ec;
  if (to_run == 0) {
    fs::remove(sbatch, ec);
    fs::remove(points_txt, ec);
    log_info("sweep: every point is finished; nothing to submit");
  } else {
    std::string lines;
    for (size_t i = 0; i < plan.size(); ++i)
      if (plan[i].action != SweepAction::SKIP)
        lines += spec.points[i].name + " " + shell_join(plan[i].train_argv) + "\n";
    write_text(points_txt, lines);
    write_text(sbatch,
               sweep_sbatch_script(spec, points_txt.string(), to_run, fs::current_path().string()));
    fs::permissions(sbatch, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add,
                    ec);
    log_info("sweep: wrote %s (array of %zu task(s), %d rank(s) each) and %s", sbatch.c_str(),
             to_run, spec.launcher.ranks, points_txt.c_str());
    log_info(
        "sweep: submit with `sbatch %s`; when the job is done, run this sweep again to "
        "summarise (finished points are skipped)",
        sbatch.c_str());
  }
  write_sweep_summary(spec);
  return 0;
}

struct Launch {
  ProcessExit exit;
  std::string start_error;  // the child could not be started ("" when it was)
  double wall_s = 0;
};

// Runs one point's command to the end, output appended to `log` after a header line.
Launch launch_point(const SweepPlanItem& item, const fs::path& log) {
  {
    std::ofstream header(log, std::ios::app);
    header << "# gossamer sweep " << now_utc() << ": " << shell_join(item.argv) << "\n";
  }
  Launch r;
  Stopwatch clock;
  try {
    r.exit = wait_process(spawn_process(item.argv, log.string(), /*new_group=*/true));
  } catch (const Error& err) {
    r.start_error = err.what();
    r.exit.code = 127;
  }
  r.wall_s = clock.seconds();
  return r;
}

void log_point_failure(const SweepPoint& p, const Launch& r, const fs::path& log) {
  const ProcessExit& e = r.exit;
  const std::string why =
      !r.start_error.empty() ? r.start_error
      : e.ok() ? strprintf("exit 0 but no checkpoint at step %lld with its metrics line",
                           (long long)p.steps)
               : e.describe();
  log_error("sweep: %s: FAILED (%s) after %s; last lines of %s:", p.name.c_str(), why.c_str(),
            format_seconds(r.wall_s).c_str(), log.c_str());
  for (const auto& line : tail_lines(log, 12)) std::fprintf(stderr, "    | %s\n", line.c_str());
}

enum class PointOutcome { FINISHED, INTERRUPTED, FAILED };

// Launches point `p` (the `launched`-th of `to_run`), records the outcome in
// OUT/POINT/sweep_status.json and logs it.
PointOutcome run_point(const SweepPoint& p, const SweepPlanItem& item, size_t launched,
                       size_t to_run) {
  const fs::path dir = p.dir, log = dir / "train.log", status = dir / "sweep_status.json";
  std::error_code ec;
  fs::remove(status, ec);
  log_info("sweep: [%zu/%zu] %s: %s (%s); output in %s", launched, to_run, p.name.c_str(),
           action_name(item.action), item.reason.c_str(), log.c_str());
  const Launch r = launch_point(item, log);
  const ProcessExit& e = r.exit;
  const PointState st = inspect_point(p, {});
  std::string outcome = "finished";
  if (!st.finished || !e.ok())
    outcome = (e.code == 128 + SIGINT || e.code == 128 + SIGTERM || SweepSignalGuard::interrupted())
                  ? "interrupted"
                  : "failed";
  json record = {
      {"status", outcome},    {"exit", r.start_error.empty() ? e.describe() : r.start_error},
      {"exit_code", e.code},  {"signal", e.signal},
      {"wall_s", r.wall_s},   {"action", action_name(item.action)},
      {"command", item.argv}, {"ended", now_utc()}};
  write_text(status, record.dump(2) + "\n");
  if (outcome == "finished") {
    const auto& m = st.metrics;
    log_info("sweep: %s: finished in %s; loss %.4f at step %lld%s", p.name.c_str(),
             format_seconds(r.wall_s).c_str(), m.losses.empty() ? 0.0 : m.losses.back(),
             (long long)p.steps,
             m.val_step >= 0 ? strprintf(", val loss %.4f", m.val_loss).c_str() : "");
    return PointOutcome::FINISHED;
  }
  if (outcome == "interrupted") {
    log_warn("sweep: %s: interrupted (%s) after %s", p.name.c_str(), e.describe().c_str(),
             format_seconds(r.wall_s).c_str());
    return PointOutcome::INTERRUPTED;
  }
  log_point_failure(p, r, log);
  return PointOutcome::FAILED;
}

// The closing message and the exit status: 128 + the signal when interrupted (130 for SIGINT,
// 143 for SIGTERM), 1 some point failed, 0 all done.
int report_sweep_end(const SweepSpec& spec, const std::vector<std::string>& failed,
                     bool interrupted) {
  if (interrupted) {
    log_warn(
        "sweep: interrupted; run the same command again to continue (finished points are "
        "skipped, interrupted ones resume from their checkpoint)");
    const int sig = SweepSignalGuard::first_signal();
    return 128 + (sig != 0 ? sig : SIGINT);
  }
  if (!failed.empty()) {
    std::string list;
    for (const auto& n : failed) {
      if (!list.empty()) list += ", ";
      list += n;
    }
    log_error(
        "sweep: %zu of %zu point(s) failed: %s (logs: %s/POINT/train.log; run the sweep "
        "again to retry them)",
        failed.size(), spec.points.size(), list.c_str(), spec.out.c_str());
    return 1;
  }
  log_info("sweep: all %zu point(s) finished; summary in %s/summary.md", spec.points.size(),
           spec.out.c_str());
  return 0;
}

// Runs the points to run one after another (a failure does not stop the others, a signal
// does), then writes the summary. Returns the exit status.
int run_points(const SweepSpec& spec, const std::vector<SweepPlanItem>& plan, size_t to_run) {
  SweepSignalGuard guard;
  std::vector<std::string> failed;
  bool interrupted = false;
  size_t launched = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const SweepPoint& p = spec.points[i];
    if (plan[i].action == SweepAction::SKIP) {
      log_info("sweep: %s: skipped (%s)", p.name.c_str(), plan[i].reason.c_str());
      continue;
    }
    if (SweepSignalGuard::interrupted()) {
      interrupted = true;
      break;
    }
    const PointOutcome outcome = run_point(p, plan[i], ++launched, to_run);
    if (outcome == PointOutcome::INTERRUPTED) {
      interrupted = true;
      break;
    }
    if (outcome == PointOutcome::FAILED) failed.push_back(p.name);
  }
  write_sweep_summary(spec);
  return report_sweep_end(spec, failed, interrupted);
}

}  // namespace

int run_sweep(const SweepSpec& spec, const SweepOptions& options) {
  if (options.summarize_only) {
    write_sweep_summary(spec);
    return 0;
  }
  // Everything that can be refused is checked before anything is written.
  check_sweep_data(spec);
  check_mpirun_found(spec);
  const std::vector<SweepPlanItem> plan = plan_sweep(spec, self_executable());
  const size_t to_run = count_to_run(plan);
  const bool slurm = spec.launcher.kind == SweepLauncherKind::SLURM;
  if (slurm) check_slurm_paths(spec);
  if (options.dry_run) {
    print_dry_run(spec, plan, to_run);
    return 0;
  }
  prepare_point_dirs(spec, plan);
  log_info("sweep %s: %zu point(s), %zu to run; launcher %s%s; out %s", spec.name.c_str(),
           spec.points.size(), to_run, sweep_launcher_name(spec.launcher.kind),
           ranks_text(spec.launcher).c_str(), spec.out.c_str());
  return slurm ? write_slurm_job(spec, plan, to_run) : run_points(spec, plan, to_run);
}

}  // namespace gossamer::sweep
