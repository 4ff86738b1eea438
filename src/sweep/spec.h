// Sweep specification: a base run config, overrides applied to every point ("set"), a grid
// (cartesian product, first key slowest) and/or a list of named points (points outer, grid
// inner when both), a launcher and an output directory (docs/SWEEP.md). Parsing is strict like
// run configs: unknown keys are errors naming the JSON path, and every point's resolved config
// is parsed and validated here, before anything runs, with errors naming the point and key.
// A point's run directory is OUT/NAME; names are given or derived from the overrides and unique.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gossamer::sweep {

// One config override: a dotted leaf key ("optimizer.lr") and its JSON value.
using SweepOverride = std::pair<std::string, nlohmann::json>;

enum class SweepLauncherKind { PLAIN, MPIRUN, SLURM };

struct SweepLauncher {
  SweepLauncherKind kind = SweepLauncherKind::PLAIN;
  int ranks = 1;                    // mpirun -np / srun -n
  std::vector<std::string> args;    // extra mpirun or srun options, before the command
  std::vector<std::string> sbatch;  // slurm: extra #SBATCH options ("--partition=gpu")
};

const char* sweep_launcher_name(SweepLauncherKind kind);

// The strings of v separated by sep ("a; b").
std::string join(const std::vector<std::string>& v, const char* sep);

struct SweepPoint {
  std::string name;
  std::string dir;                       // OUT/NAME (the run's train.out_dir)
  std::vector<SweepOverride> overrides;  // this point's own (points[i].set, then grid), in order
  nlohmann::json config;                 // the resolved run config (to_json), out_dir = dir
  int64_t steps = 0;                     // train.steps
};

struct SweepSpec {
  std::string source;  // the sweep file ("<inline>" for tests)
  std::string name;    // "name" or the file's stem
  std::string out;     // output directory (--out, "out", or runs/sweeps/NAME)
  SweepLauncher launcher;
  std::string reference;             // a point name, or ""
  std::vector<std::string> medians;  // metric fields (dotted paths) whose per-step median is shown
  std::vector<std::string> varied_keys;  // keys set by points or grid, first appearance order
  std::vector<SweepPoint> points;
};

// Parses a sweep object. `base_dir` resolves a relative "base" path; `out_override` (from
// --out) replaces "out" when non-empty; `default_name` is used when "name" is absent. Throws
// gossamer::Error naming `source` and the JSON path, or the point and config key.
SweepSpec parse_sweep(const nlohmann::ordered_json& j, const std::string& source,
                      const std::string& base_dir, const std::string& default_name,
                      const std::string& out_override);
// Fails unless every point's data.train (and non-empty data.val) shard patterns match files
// (relative to the working directory, as for `gossamer train`), naming the point and key.
void check_sweep_data(const SweepSpec& spec);
// Reads SWEEP.json and parses it (base relative to the file, name defaults to its stem).
// `sets` ("section.key=VALUE", the command line's --set) join the file's "set", replacing a
// key it sets there; a key the grid or the points vary is refused (it would be overridden).
SweepSpec load_sweep(const std::string& path, const std::string& out_override,
                     const std::vector<std::string>& sets = {});

// A directory name from free text: characters outside [A-Za-z0-9._=,+-] become '_'.
std::string sanitize_point_name(const std::string& text);
// "optimizer.lr" -> "optimizer.lr"; values: strings unquoted, everything else as JSON.
std::string override_value_text(const nlohmann::json& value);
// The value of a dotted key in a resolved config (null when absent).
nlohmann::json config_value(const nlohmann::json& config, const std::string& dotted_key);

}  // namespace gossamer::sweep
