// A sweep point's state on disk (is it finished? which checkpoint? same config?) and the
// aggregation of all points into OUT/summary.csv, OUT/summary.md and OUT/loss.png. A point is
// finished when its run directory has a checkpoint at train.steps and metrics.jsonl has that
// step's training line. Summaries are computed from metrics.jsonl only, so they are the same
// whether a point ran now, earlier, or under Slurm.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/median.h"
#include "sweep/spec.h"

namespace gossamer::sweep {

// What metrics.jsonl says (training lines have "loss", evaluation lines "val_loss").
struct PointMetrics {
  bool exists = false;
  std::vector<int64_t> steps;  // training lines, in file order
  std::vector<double> losses;
  double val_loss = 0;
  int64_t val_step = -1;  // -1: no evaluation line
  int64_t val_tokens = 0;
  int64_t tokens = 0;                                  // "tokens" of the last training line
  std::map<std::string, std::vector<double>> numeric;  // field (dotted path) -> one per line
  std::vector<std::string> top_level_fields;           // numeric top-level fields, first seen
};

// Reads RUN/metrics.jsonl; numeric values of every top-level field and of `extra` dotted
// paths (e.g. "time_s.total") are collected per training line. A line that is not JSON (a
// run killed mid-write) is skipped.
PointMetrics read_point_metrics(const std::string& run_dir, const std::vector<std::string>& extra);

struct PointState {
  PointMetrics metrics;
  int64_t checkpoint_step = -1;   // newest complete checkpoint, -1: none
  bool final_checkpoint = false;  // checkpoints/step_<train.steps> exists
  bool final_metrics = false;     // metrics.jsonl has the training line of step train.steps
  bool finished = false;          // both
  std::string config_diff;        // "" or "KEY: A in the run, B now" (RUN/config.json vs point)
  std::string definition_diff;    // the same for the first key a resume may not change (e.g.
                                  // not train.steps: a longer run continues the shorter one)
  bool has_run = false;           // RUN/config.json or metrics.jsonl exists (train started)
  std::string last_launch;        // sweep_status.json "status" ("failed", ...) or ""
};

PointState inspect_point(const SweepPoint& point, const std::vector<std::string>& extra_fields);

struct SweepRow {
  std::string name;
  std::vector<std::string> values;  // one per SweepSpec::varied_keys
  std::string status;               // finished, failed, interrupted, incomplete, not run
  int64_t steps = 0, target_steps = 0;
  double train_loss = 0;  // mean of the last kTrainLossWindow training losses (NaN: none)
  double val_loss = 0;    // NaN: none
  int64_t val_step = -1;
  int64_t tokens = 0;
  double time_s = 0;            // sum of time_s.total over the training lines
  double step_time_s = 0;       // median of time_s.total
  std::vector<double> medians;  // one per summary median column
  double val_gap = 0;           // (val - reference val) / reference val, NaN: none
};

constexpr int kTrainLossWindow = 10;

struct SweepSummary {
  std::vector<std::string> median_fields;  // the spec's, then other "bytes_*" fields found
  std::vector<SweepRow> rows;
};

SweepSummary summarize_sweep(const SweepSpec& spec);
std::string summary_csv(const SweepSpec& spec, const SweepSummary& s);
std::string summary_markdown(const SweepSpec& spec, const SweepSummary& s);
// Writes OUT/summary.csv and OUT/summary.md (atomically) and OUT/loss.png through the embedded
// scripts/plot_metrics.py (skipped with a warning when python3 or matplotlib is missing).
SweepSummary write_sweep_summary(const SweepSpec& spec);

}  // namespace gossamer::sweep
