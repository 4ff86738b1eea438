// Point state and sweep summaries (see summary.h). Only metrics.jsonl, the checkpoint
// directory names, RUN/config.json and the sweep's own RUN/sweep_status.json are read; nothing
// in a run directory is modified. OUT/loss.png is drawn by the plot script compiled into the
// binary (sweep/plot_script.h) under /usr/bin/python3, so no source tree is needed; a missing
// interpreter or matplotlib is one warning naming what to install, never an error.
#include "sweep/summary.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "io/json_path.h"
#include "run/resume_check.h"
#include "run/run_config.h"
#include "sweep/plot_script.h"
#include "sweep/process.h"

namespace gossamer::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The JSON object in `path`, or null when there is none (a point not run yet).
json read_json_file(const fs::path& path) {
  try {
    return io::read_json_object(path.string(), "JSON file");
  } catch (const Error&) {
    return nullptr;
  }
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string num(double x, const char* fmt = "%.9g") {
  return std::isfinite(x) ? strprintf(fmt, x) : "";
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out.empty() ? "–" : out;
}

std::string md_num(double x, const char* fmt) {
  return std::isfinite(x) ? strprintf(fmt, x) : "–";
}

std::string md_seconds(double s) {
  if (!std::isfinite(s)) return "–";
  if (s < 1) return strprintf("%.0f ms", 1e3 * s);
  if (s < 120) return strprintf("%.1f s", s);
  if (s < 7200) return strprintf("%.1f min", s / 60);
  return strprintf("%.2f h", s / 3600);
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Debian's interpreter, which python3-matplotlib installs into (a python3 earlier in PATH, e.g.
// pyenv's, often lacks matplotlib).
constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kMatplotlibHint = "apt install python3-matplotlib";

// Draws `png` from the run directories' metrics.jsonl with the embedded plot script, run as
// `python3 -c SCRIPT ...`. Never fails the sweep: a missing python3 or matplotlib, or a failing
// script, is one warning and no plot.
void write_loss_plot(const std::string& sweep_name, const std::vector<std::string>& dirs,
                     const fs::path& png) {
  if (access(kPython, X_OK) != 0) {
    log_warn("sweep: no loss plot: python3 with matplotlib not found (no %s; %s)", kPython,
             kMatplotlibHint);
    return;
  }
  std::error_code ec;
  const fs::path plot_log = png.parent_path() / ".loss.png.log";
  fs::remove(plot_log, ec);
  std::vector<std::string> argv = {
      kPython,     "-c", std::string(plot_metrics_script()), "--title", "sweep " + sweep_name,
      png.string()};
  argv.insert(argv.end(), dirs.begin(), dirs.end());
  ProcessExit e;
  std::string start_error;
  try {
    e = wait_process(spawn_process(argv, plot_log.string(), false));
  } catch (const Error& err) {
    start_error = err.what();
  }
  bool no_matplotlib = false;
  std::string last;
  if (!e.ok()) {
    std::ifstream in(plot_log);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      last = line;
      no_matplotlib = no_matplotlib || line.find("No module named 'matplotlib") != line.npos;
    }
  }
  fs::remove(plot_log, ec);
  if (!start_error.empty())
    log_warn("sweep: no loss plot (%s)", start_error.c_str());
  else if (no_matplotlib)
    log_warn("sweep: no loss plot: python3 with matplotlib not found (%s cannot import it; %s)",
             kPython, kMatplotlibHint);
  else if (!e.ok())
    log_warn("sweep: no loss plot (plot_metrics.py %s: %s)", e.describe().c_str(), last.c_str());
}

}  // namespace

PointMetrics read_point_metrics(const std::string& run_dir, const std::vector<std::string>& extra) {
  PointMetrics m;
  std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
  if (!in.good()) return m;
  m.exists = true;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) continue;
    auto step = j.find("step");
    if (step == j.end() || !step->is_number_integer()) continue;
    if (auto v = j.find("val_loss"); v != j.end() && v->is_number()) {
      m.val_loss = v->get<double>();
      m.val_step = step->get<int64_t>();
      auto t = j.find("val_tokens");
      m.val_tokens = t != j.end() && t->is_number_integer() ? t->get<int64_t>() : 0;
    }
    auto loss = j.find("loss");
    if (loss == j.end() || !loss->is_number()) continue;
    m.steps.push_back(step->get<int64_t>());
    m.losses.push_back(loss->get<double>());
    if (auto t = j.find("tokens"); t != j.end() && t->is_number_integer())
      m.tokens = t->get<int64_t>();
    for (const auto& [key, value] : j.items()) {
      if (!value.is_number() || key == "step") continue;
      auto& v = m.numeric[key];
      if (v.empty() && std::find(m.top_level_fields.begin(), m.top_level_fields.end(), key) ==
                           m.top_level_fields.end())
        m.top_level_fields.push_back(key);
      v.push_back(value.get<double>());
    }
    for (const auto& path : extra) {
      if (path.find('.') == std::string::npos) continue;  // top-level fields are collected above
      const json* v = io::find_dotted(j, path);
      if (v && v->is_number()) m.numeric[path].push_back(v->get<double>());
    }
  }
  return m;
}

PointState inspect_point(const SweepPoint& point, const std::vector<std::string>& extra_fields) {
  PointState s;
  s.metrics = read_point_metrics(point.dir, extra_fields);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(point.dir) / "checkpoints", ec)) {
    const std::string name = e.path().filename().string();
    if (!starts_with(name, "step_") || name.size() == 5 || !e.is_directory()) continue;
    if (name.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    const int64_t step = std::stoll(name.substr(5));
    s.checkpoint_step = std::max(s.checkpoint_step, step);
    if (step == point.steps) s.final_checkpoint = true;
  }
  for (int64_t step : s.metrics.steps) s.final_metrics = s.final_metrics || step == point.steps;
  s.finished = s.final_checkpoint && s.final_metrics;

  json run = read_json_file(fs::path(point.dir) / "config.json");
  run::migrate_legacy_config(run);  // run directories written before optimizer sections
  s.has_run = run.is_object() || s.metrics.exists;
  if (run.is_object()) {
    // Key by key, as the resume check compares them (sections nest: optimizer.scape.sparsity).
    for (const std::string& dotted : run::config_key_paths()) {
      const json* value = io::find_dotted(point.config, dotted);
      if (!value) continue;  // a section of a method this point does not use
      if (dotted == "train.out_dir") continue;
      // A key the run predates compares as the behaviour it ran with (run/resume_check.h),
      // or as anything when that is not recorded: a newer binary's keys do not make every
      // finished point stale.
      const json have = run::saved_value(run, dotted);
      if (have.is_null() || have == *value) continue;
      const std::string diff = strprintf("%s: %s in the run, %s now", dotted.c_str(),
                                         have.dump().c_str(), value->dump().c_str());
      if (s.config_diff.empty()) s.config_diff = diff;
      if (!run::change_is_harmless_on_resume(dotted)) {
        s.definition_diff = diff;
        break;
      }
    }
  }
  const json status = read_json_file(fs::path(point.dir) / "sweep_status.json");
  if (status.is_object() && status.contains("status") && status["status"].is_string())
    s.last_launch = status["status"].get<std::string>();
  return s;
}

SweepSummary summarize_sweep(const SweepSpec& spec) {
  SweepSummary out;
  out.median_fields = spec.medians;
  std::vector<std::string> extra = spec.medians;
  extra.push_back("time_s.total");
  std::vector<PointState> states;
  for (const auto& p : spec.points) {
    states.push_back(inspect_point(p, extra));
    for (const auto& f : states.back().metrics.top_level_fields)
      if (starts_with(f, "bytes_") && std::find(out.median_fields.begin(), out.median_fields.end(),
                                                f) == out.median_fields.end())
        out.median_fields.push_back(f);
  }
  for (size_t i = 0; i < spec.points.size(); ++i) {
    const SweepPoint& p = spec.points[i];
    const PointMetrics& m = states[i].metrics;
    SweepRow r;
    r.name = p.name;
    for (const auto& key : spec.varied_keys) {
      const json v = config_value(p.config, key);
      r.values.push_back(v.is_null() ? "" : override_value_text(v));
    }
    if (states[i].finished)
      r.status = "finished";
    else if (states[i].last_launch == "failed" || states[i].last_launch == "interrupted")
      r.status = states[i].last_launch;
    else
      r.status = m.steps.empty() ? "not run" : "incomplete";
    r.target_steps = p.steps;
    for (int64_t s : m.steps) r.steps = std::max(r.steps, s);
    const size_t n = m.losses.size(), k = std::min<size_t>(n, kTrainLossWindow);
    double sum = 0;
    for (size_t j = n - k; j < n; ++j) sum += m.losses[j];
    r.train_loss = k ? sum / double(k) : kNaN;
    r.val_loss = m.val_step >= 0 ? m.val_loss : kNaN;
    r.val_step = m.val_step;
    r.tokens = m.tokens;
    auto field = [&](const std::string& f) -> std::vector<double> {
      auto it = m.numeric.find(f);
      return it == m.numeric.end() ? std::vector<double>{} : it->second;
    };
    const std::vector<double> times = field("time_s.total");
    r.time_s = 0;
    for (double t : times) r.time_s += t;
    if (times.empty()) r.time_s = kNaN;
    r.step_time_s = median(times);
    for (const auto& f : out.median_fields) r.medians.push_back(median(field(f)));
    r.val_gap = kNaN;
    out.rows.push_back(std::move(r));
  }
  if (!spec.reference.empty()) {
    double ref = kNaN;
    for (const auto& r : out.rows)
      if (r.name == spec.reference) ref = r.val_loss;
    for (auto& r : out.rows)
      if (std::isfinite(ref) && ref != 0 && std::isfinite(r.val_loss))
        r.val_gap = (r.val_loss - ref) / ref;
  }
  return out;
}

std::string summary_csv(const SweepSpec& spec, const SweepSummary& s) {
  std::vector<std::string> header = {"name"};
  for (const auto& k : spec.varied_keys) header.push_back(k);
  for (const char* h : {"status", "steps", "train_steps", "train_loss_last10", "val_loss",
                        "val_step", "tokens", "time_s", "step_time_s_median"})
    header.push_back(h);
  for (const auto& f : s.median_fields) header.push_back(f + "_median");
  if (!spec.reference.empty()) header.push_back("val_gap_vs_reference");
  std::string out;
  auto row = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += csv_field(cells[i]);
    }
    out += "\n";
  };
  row(header);
  for (const auto& r : s.rows) {
    std::vector<std::string> c = {r.name};
    c.insert(c.end(), r.values.begin(), r.values.end());
    c.push_back(r.status);
    c.push_back(std::to_string(r.steps));
    c.push_back(std::to_string(r.target_steps));
    c.push_back(num(r.train_loss));
    c.push_back(num(r.val_loss));
    c.push_back(r.val_step >= 0 ? std::to_string(r.val_step) : "");
    c.push_back(std::to_string(r.tokens));
    c.push_back(num(r.time_s));
    c.push_back(num(r.step_time_s));
    for (double m : r.medians) c.push_back(num(m));
    if (!spec.reference.empty()) c.push_back(num(r.val_gap));
    row(c);
  }
  return out;
}

std::string summary_markdown(const SweepSpec& spec, const SweepSummary& s) {
  std::ostringstream o;
  size_t finished = 0;
  for (const auto& r : s.rows) finished += r.status == "finished";
  o << "# Sweep `" << spec.name << "`\n\n"
    << "From `" << spec.source << "`: " << s.rows.size() << " point(s), " << finished
    << " finished; launcher " << sweep_launcher_name(spec.launcher.kind);
  if (spec.launcher.kind != SweepLauncherKind::PLAIN)
    o << " with " << spec.launcher.ranks << " rank(s)";
  o << ".\n\n| point |";
  for (const auto& k : spec.varied_keys) o << " " << md_cell(k) << " |";
  o << " status | steps | train loss | val loss | tokens | time | step time |";
  for (const auto& f : s.median_fields)
    o << " " << md_cell(f == "bytes_sent" ? std::string("bytes sent/step") : f) << " |";
  if (!spec.reference.empty()) o << " val gap |";
  o << "\n|---|";
  for (size_t i = 0; i < spec.varied_keys.size(); ++i) o << "---|";
  o << "---|--:|--:|--:|--:|--:|--:|";
  for (size_t i = 0; i < s.median_fields.size(); ++i) o << "--:|";
  if (!spec.reference.empty()) o << "--:|";
  o << "\n";
  for (const auto& r : s.rows) {
    o << "| " << md_cell(r.name) << " |";
    for (const auto& v : r.values) o << " " << md_cell(v) << " |";
    o << " " << r.status << " | " << r.steps;
    if (r.steps != r.target_steps) o << "/" << r.target_steps;
    o << " | " << md_num(r.train_loss, "%.4f") << " | " << md_num(r.val_loss, "%.4f");
    if (r.val_step >= 0 && r.val_step != r.target_steps) o << " (step " << r.val_step << ")";
    o << " | " << r.tokens << " | " << md_seconds(r.time_s) << " | " << md_seconds(r.step_time_s)
      << " |";
    for (size_t i = 0; i < r.medians.size(); ++i) {
      const std::string& f = s.median_fields[i];
      const double m = r.medians[i];
      o << " "
        << (!std::isfinite(m)         ? std::string("–")
            : starts_with(f, "bytes") ? format_bytes(m)
                                      : strprintf("%.4g", m))
        << " |";
    }
    if (!spec.reference.empty())
      o << " "
        << (r.name == spec.reference ? std::string("ref") : md_num(100 * r.val_gap, "%+.2f%%"))
        << " |";
    o << "\n";
  }
  o << "\n- **train loss**: mean of the last " << kTrainLossWindow
    << " training steps' `loss`; **val loss**: the last evaluation (its step in parentheses "
       "when that is not the final step).\n"
    << "- **time**: sum of `time_s.total` over the steps (training steps only: start-up, "
       "evaluation and checkpoints are not counted); **step time**: its median.\n"
    << "- per-step columns after it are medians over the steps of `metrics.jsonl`.\n";
  if (!spec.reference.empty())
    o << "- **val gap**: (val loss − val loss of `" << spec.reference << "`) / the latter.\n";
  if (fs::exists(fs::path(spec.out) / "loss.png")) o << "\n![loss curves](loss.png)\n";
  return o.str();
}

SweepSummary write_sweep_summary(const SweepSpec& spec) {
  const fs::path out = spec.out;
  std::error_code ec;
  fs::create_directories(out, ec);
  GOSSAMER_CHECK(!ec && fs::is_directory(out), "cannot create sweep directory %s: %s",
                 out.string().c_str(), ec ? ec.message().c_str() : "not a directory");
  SweepSummary s = summarize_sweep(spec);

  // The loss plot: every point with training lines.
  const fs::path png = out / "loss.png";
  fs::remove(png, ec);
  std::vector<std::string> dirs;
  for (size_t i = 0; i < spec.points.size(); ++i)
    if (s.rows[i].steps > 0) dirs.push_back(spec.points[i].dir);
  if (!dirs.empty()) write_loss_plot(spec.name, dirs, png);
  io::write_file_atomically((out / "summary.csv").string(), summary_csv(spec, s));
  io::write_file_atomically((out / "summary.md").string(), summary_markdown(spec, s));
  log_info("sweep: wrote %s/summary.csv, summary.md%s", out.string().c_str(),
           fs::exists(png) ? ", loss.png" : "");
  return s;
}

}  // namespace gossamer::sweep
