// Strict parsing of sweep files and expansion into points (see spec.h). Override keys
// are checked against the run config's own key list (to_json of a default RunConfig), so a
// typo is reported with the JSON path where it was written; each point's merged config then
// goes through parse_run_config and RunConfig::validate with the point's name as the source.
#include "sweep/spec.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/config_visitors.h"
#include "core/error.h"
#include "data/loader.h"
#include "io/json_file.h"
#include "run/run_config.h"

namespace gossamer::sweep {

namespace fs = std::filesystem;
using config_detail::describe_json;  // a value in messages, worded as the config's errors
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

constexpr size_t kMaxNameLength = 120;
// Files the sweep writes next to the point directories.
const char* const kReservedNames[] = {"summary.csv", "summary.md", "loss.png", "sweep.sbatch",
                                      "points.txt"};

// Fails on any key of `obj` outside `known`, naming the path.
void check_keys(const ordered_json& obj, const std::string& where,
                const std::vector<std::string>& known) {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (const auto& k : known) ok = ok || k == key;
    if (!ok) {
      const std::string path = where.empty() ? key : where + "." + key;
      fail("%s: unknown key (keys%s%s: %s)", path.c_str(), where.empty() ? "" : " of ",
           where.c_str(), join(known, ", ").c_str());
    }
  }
}

std::string get_string(const ordered_json& j, const std::string& where) {
  GOSSAMER_CHECK(j.is_string(), "%s: expected a string, found %s", where.c_str(),
                 describe_json(j).c_str());
  return j.get<std::string>();
}

std::vector<std::string> get_strings(const ordered_json& j, const std::string& where) {
  GOSSAMER_CHECK(j.is_array(), "%s: expected an array of strings, found %s", where.c_str(),
                 describe_json(j).c_str());
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(get_string(j[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

json to_plain(const ordered_json& j) {
  return json::parse(j.dump());
}

// Every key of the run config ("section.key", "section.sub.key"), from its visit() lists.
struct ConfigKeys {
  std::vector<std::string> keys = run::config_key_paths();

  // The keys under a dotted prefix ("optimizer." -> "lr, scape.sparsity, ..."), for errors.
  std::string keys_under(const std::string& prefix) const {
    std::vector<std::string> under;
    for (const auto& k : keys)
      if (k.starts_with(prefix)) under.push_back(k.substr(prefix.size()));
    return join(under, ", ");
  }

  // Fails unless `key` is a key of the run config (and not train.out_dir).
  void check(const std::string& key, const std::string& where) const {
    const size_t dot = key.find('.');
    GOSSAMER_CHECK(dot != std::string::npos && dot > 0 && dot + 1 < key.size(),
                   "%s: expected a config key SECTION.KEY (e.g. optimizer.lr), found \"%s\"",
                   where.c_str(), key.c_str());
    const std::string section = key.substr(0, dot);
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
      GOSSAMER_CHECK(key != "train.out_dir",
                     "%s: the sweep sets train.out_dir itself (OUT/POINT); set \"out\" instead",
                     where.c_str());
      return;
    }
    const std::string in_section = keys_under(section + ".");
    if (in_section.empty()) {
      std::vector<std::string> sections;
      for (const auto& k : keys) {
        const std::string s = k.substr(0, k.find('.'));
        if (sections.empty() || sections.back() != s) sections.push_back(s);
      }
      fail("%s: unknown config section \"%s\" (sections: %s)", where.c_str(), section.c_str(),
           join(sections, ", ").c_str());
    }
    fail("%s: unknown config key (keys of %s: %s)", where.c_str(), section.c_str(),
         in_section.c_str());
  }
};

// Reads an object of "section.key": value overrides, checking each key.
std::vector<SweepOverride> read_overrides(const ordered_json& j, const std::string& where,
                                          const ConfigKeys& keys) {
  GOSSAMER_CHECK(j.is_object(), "%s: expected an object of \"section.key\": value, found %s",
                 where.c_str(), describe_json(j).c_str());
  std::vector<SweepOverride> out;
  for (const auto& [key, value] : j.items()) {
    const std::string path = where + "." + key;
    keys.check(key, path);
    GOSSAMER_CHECK(!value.is_null() && !value.is_object() && !value.is_array(),
                   "%s: expected a value (string, number or boolean), found %s", path.c_str(),
                   describe_json(value).c_str());
    out.emplace_back(key, to_plain(value));
  }
  return out;
}

// Sets the dotted key in the config, creating the sections on its path.
void apply(json& config, const SweepOverride& o, const std::string& where) {
  json* node = &config;
  size_t start = 0;
  for (size_t dot = o.first.find('.'); dot != std::string::npos; dot = o.first.find('.', start)) {
    const std::string section = o.first.substr(0, dot);
    json& s = (*node)[o.first.substr(start, dot - start)];
    if (s.is_null()) s = json::object();
    GOSSAMER_CHECK(s.is_object(), "%s: section %s of the base config is not an object",
                   where.c_str(), section.c_str());
    node = &s;
    start = dot + 1;
  }
  (*node)[o.first.substr(start)] = o.second;
}

std::string check_name(const std::string& name, const std::string& where) {
  GOSSAMER_CHECK(!name.empty(), "%s: must not be empty", where.c_str());
  GOSSAMER_CHECK(sanitize_point_name(name) == name && name[0] != '.',
                 "%s: \"%s\" is not a directory name: use letters, digits and . _ = , + - (not "
                 "starting with .)",
                 where.c_str(), name.c_str());
  GOSSAMER_CHECK(name.size() <= kMaxNameLength, "%s: \"%s\" is longer than %zu characters",
                 where.c_str(), name.c_str(), kMaxNameLength);
  for (const char* r : kReservedNames)
    GOSSAMER_CHECK(name != r, "%s: \"%s\" is a file the sweep writes", where.c_str(), name.c_str());
  return name;
}

struct PointTemplate {
  std::string name;  // given, or ""
  std::vector<SweepOverride> set;
  std::string where;  // "points[1]"
};

// "grid": each key with its values, in the order written.
using SweepGrid = std::vector<std::pair<std::string, std::vector<json>>>;

// "base": a run config path (relative to the sweep file's directory) or an inline config object.
// The base must parse as a run config on its own (unknown keys are named in its own file).
json read_base(const ordered_json& j, const std::string& base_dir) {
  GOSSAMER_CHECK(j.contains("base"),
                 "base: missing (a run config path, relative to the sweep file, or an inline "
                 "config object)");
  json base;
  std::string base_where = "base";
  if (j["base"].is_string()) {
    fs::path p = j["base"].get<std::string>();
    if (p.is_relative()) p = fs::path(base_dir) / p;
    try {
      base = io::read_strict_json_file<json>(p.string(), "config file");
    } catch (const Error& e) {
      fail("base: %s", e.what());
    }
    base_where = "base " + p.string();
  } else {
    GOSSAMER_CHECK(j["base"].is_object(),
                   "base: expected a config file path or a config object, found %s",
                   describe_json(j["base"]).c_str());
    base = to_plain(j["base"]);
  }
  GOSSAMER_CHECK(base.is_object(), "%s: expected a JSON object at the top level",
                 base_where.c_str());
  run::parse_run_config(base, base_where);
  return base;
}

// "grid": {"section.key": [values...]}, keys checked, values scalars.
SweepGrid read_grid(const ordered_json& g, const ConfigKeys& keys) {
  GOSSAMER_CHECK(g.is_object() && !g.empty(),
                 "grid: expected a non-empty object of \"section.key\": [values...], found %s",
                 g.is_object() ? "an empty object" : describe_json(g).c_str());
  SweepGrid grid;
  for (const auto& [key, values] : g.items()) {
    const std::string path = "grid." + key;
    keys.check(key, path);
    GOSSAMER_CHECK(values.is_array() && !values.empty(),
                   "%s: expected a non-empty array of values, found %s", path.c_str(),
                   values.is_array() ? "an empty array" : describe_json(values).c_str());
    std::vector<json> vs;
    for (size_t i = 0; i < values.size(); ++i) {
      const ordered_json& v = values[i];
      GOSSAMER_CHECK(!v.is_null() && !v.is_object() && !v.is_array(),
                     "%s[%zu]: expected a value (string, number or boolean), found %s",
                     path.c_str(), i, describe_json(v).c_str());
      vs.push_back(to_plain(v));
    }
    grid.emplace_back(key, std::move(vs));
  }
  return grid;
}

// points[i]: {"name", "set"}; a key may be set here or in the grid, not both.
PointTemplate read_point_template(const ordered_json& p, size_t i, const SweepGrid& grid,
                                  const ConfigKeys& keys) {
  PointTemplate t;
  t.where = "points[" + std::to_string(i) + "]";
  GOSSAMER_CHECK(p.is_object(), "%s: expected an object {\"name\", \"set\"}, found %s",
                 t.where.c_str(), describe_json(p).c_str());
  check_keys(p, t.where, {"name", "set"});
  if (p.contains("name"))
    t.name = check_name(get_string(p["name"], t.where + ".name"), t.where + ".name");
  if (p.contains("set")) t.set = read_overrides(p["set"], t.where + ".set", keys);
  for (const auto& [key, value] : t.set)
    for (const auto& [gkey, values] : grid)
      GOSSAMER_CHECK(key != gkey, "%s.set.%s: also a grid key (set it in one place)",
                     t.where.c_str(), key.c_str());
  return t;
}

// "points", or one unnamed template without overrides when absent.
std::vector<PointTemplate> read_point_templates(const ordered_json& j, const SweepGrid& grid,
                                                const ConfigKeys& keys) {
  if (!j.contains("points")) return {PointTemplate{}};
  const ordered_json& ps = j["points"];
  GOSSAMER_CHECK(ps.is_array() && !ps.empty(),
                 "points: expected a non-empty array of {\"name\", \"set\"} objects, found %s",
                 ps.is_array() ? "an empty array" : describe_json(ps).c_str());
  std::vector<PointTemplate> templates;
  for (size_t i = 0; i < ps.size(); ++i)
    templates.push_back(read_point_template(ps[i], i, grid, keys));
  return templates;
}

// Keys the points differ in: those of the points' "set" (first appearance), then the grid's.
std::vector<std::string> varied_keys(const std::vector<PointTemplate>& templates,
                                     const SweepGrid& grid) {
  std::vector<std::string> out;
  for (const auto& t : templates)
    for (const auto& [key, value] : t.set)
      if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
  for (const auto& [key, values] : grid) out.push_back(key);
  return out;
}

// Describes overrides for point names and messages ("lr=0.001,zero_stage=1"): a key is shown by
// its last component unless another varied key shares that component.
class OverrideNamer {
 public:
  explicit OverrideNamer(const std::vector<std::string>& varied) {
    for (const auto& k : varied) ++leaf_count_[leaf(k)];
  }
  std::string describe(const std::vector<SweepOverride>& os) const {
    std::vector<std::string> parts;
    for (const auto& [k, v] : os) parts.push_back(short_key(k) + "=" + override_value_text(v));
    return join(parts, ",");
  }

 private:
  static std::string leaf(const std::string& k) { return k.substr(k.rfind('.') + 1); }
  std::string short_key(const std::string& k) const {
    auto it = leaf_count_.find(leaf(k));
    return it != leaf_count_.end() && it->second > 1 ? k : leaf(k);
  }
  std::map<std::string, int> leaf_count_;
};

SweepLauncherKind read_launcher_kind(const ordered_json& k) {
  const std::string kind = get_string(k, "launcher.kind");
  if (kind == "plain") return SweepLauncherKind::PLAIN;
  if (kind == "mpirun") return SweepLauncherKind::MPIRUN;
  if (kind == "slurm") return SweepLauncherKind::SLURM;
  fail("launcher.kind: expected \"plain\", \"mpirun\" or \"slurm\", found \"%s\"", kind.c_str());
}

// "launcher": {"kind", "ranks", "args", "sbatch"}; plain takes no ranks or args, only slurm
// takes sbatch options.
SweepLauncher read_launcher(const ordered_json& l) {
  SweepLauncher launcher;
  GOSSAMER_CHECK(l.is_object(), "launcher: expected an object, found %s", describe_json(l).c_str());
  check_keys(l, "launcher", {"kind", "ranks", "args", "sbatch"});
  if (l.contains("kind")) launcher.kind = read_launcher_kind(l["kind"]);
  if (l.contains("ranks")) {
    const ordered_json& r = l["ranks"];
    GOSSAMER_CHECK(r.is_number_integer() && r.get<int64_t>() >= 1 && r.get<int64_t>() <= 65536,
                   "launcher.ranks: expected an integer >= 1, found %s", r.dump().c_str());
    launcher.ranks = int(r.get<int64_t>());
  }
  if (l.contains("args")) launcher.args = get_strings(l["args"], "launcher.args");
  if (l.contains("sbatch")) launcher.sbatch = get_strings(l["sbatch"], "launcher.sbatch");
  GOSSAMER_CHECK(
      launcher.kind != SweepLauncherKind::PLAIN || (launcher.ranks == 1 && launcher.args.empty()),
      "launcher: kind \"plain\" runs one process without options; use kind "
      "\"mpirun\" (or \"slurm\") for ranks and args");
  GOSSAMER_CHECK(launcher.kind == SweepLauncherKind::SLURM || launcher.sbatch.empty(),
                 "launcher.sbatch: only for kind \"slurm\"");
  return launcher;
}

// The output directory: --out, else "out", else runs/sweeps/NAME.
std::string read_out(const ordered_json& j, const std::string& name,
                     const std::string& out_override) {
  std::string out;
  if (!out_override.empty())
    out = out_override;
  else if (j.contains("out"))
    out = get_string(j["out"], "out");
  else
    out = "runs/sweeps/" + name;
  GOSSAMER_CHECK(!out.empty(), "out: must not be empty");
  return out;
}

std::vector<std::string> read_medians(const ordered_json& j) {
  if (!j.contains("medians")) return {"bytes_sent"};
  std::vector<std::string> medians = get_strings(j["medians"], "medians");
  for (size_t i = 0; i < medians.size(); ++i)
    GOSSAMER_CHECK(!medians[i].empty(), "medians[%zu]: must not be empty", i);
  return medians;
}

// Combination `c` of the grid's values (the first key varies slowest).
std::vector<SweepOverride> grid_combination(const SweepGrid& grid, size_t c) {
  std::vector<SweepOverride> part;
  for (size_t g = grid.size(); g-- > 0;) {
    const auto& values = grid[g].second;
    part.insert(part.begin(), {grid[g].first, values[c % values.size()]});
    c /= values.size();
  }
  return part;
}

// Where a point comes from, for messages: "points[1] x grid lr=0.1", "grid lr=0.1", "base".
std::string point_origin(const PointTemplate& t, const std::vector<SweepOverride>& grid_part,
                         const OverrideNamer& namer) {
  std::string where = t.where;
  if (!grid_part.empty()) {
    if (!where.empty()) where += " x ";
    where += "grid " + namer.describe(grid_part);
  }
  return where.empty() ? "base" : where;
}

// A point's name: its given name (or its own overrides), then its grid values; "base" if none.
std::string point_name(const PointTemplate& t, const std::vector<SweepOverride>& grid_part,
                       const OverrideNamer& namer) {
  std::vector<std::string> parts;
  const std::string head = t.name.empty() ? namer.describe(t.set) : t.name;
  if (!head.empty()) parts.push_back(head);
  if (!grid_part.empty()) parts.push_back(namer.describe(grid_part));
  return parts.empty() ? "base" : sanitize_point_name(join(parts, ","));
}

// Every point, templates outer and grid inner, with a usable and unique name and OUT/NAME as
// its directory (configs are resolved later).
std::vector<SweepPoint> expand_points(const std::vector<PointTemplate>& templates,
                                      const SweepGrid& grid, const OverrideNamer& namer,
                                      const std::string& out) {
  size_t combos = 1;
  for (const auto& [key, values] : grid) combos *= values.size();
  std::vector<SweepPoint> points;
  std::map<std::string, std::string> name_origin;  // name -> where it was first derived
  for (const auto& t : templates) {
    for (size_t c = 0; c < combos; ++c) {
      const std::vector<SweepOverride> grid_part = grid_combination(grid, c);
      const std::string where = point_origin(t, grid_part, namer);
      SweepPoint p;
      p.overrides = t.set;
      p.overrides.insert(p.overrides.end(), grid_part.begin(), grid_part.end());
      p.name = point_name(t, grid_part, namer);
      GOSSAMER_CHECK(p.name.size() <= kMaxNameLength && p.name[0] != '.',
                     "%s: derived point name \"%s\" is unusable (too long or starting with "
                     ".): give the points names",
                     where.c_str(), p.name.c_str());
      if (!name_origin.emplace(p.name, where).second)
        fail("%s: point name \"%s\" is already used by %s: give the points distinct names",
             where.c_str(), p.name.c_str(), name_origin[p.name].c_str());
      p.dir = (fs::path(out) / p.name).string();
      points.push_back(std::move(p));
    }
  }
  return points;
}

// "reference": the name of one of the points.
std::string read_reference(const ordered_json& j, const std::vector<SweepPoint>& points) {
  if (!j.contains("reference")) return "";
  const std::string reference = get_string(j["reference"], "reference");
  std::set<std::string> names;
  for (const auto& p : points) names.insert(p.name);
  GOSSAMER_CHECK(names.count(reference), "reference: no point is named \"%s\" (points: %s)",
                 reference.c_str(),
                 join(std::vector<std::string>(names.begin(), names.end()), ", ").c_str());
  return reference;
}

// Each point's config: base, then "set", then its own overrides, then train.out_dir; parsed and
// validated (for the launcher's rank count) with the point's name in every message.
void resolve_point_configs(std::vector<SweepPoint>& points, const json& base,
                           const std::vector<SweepOverride>& common, int ranks) {
  for (auto& p : points) {
    const std::string where = "point " + p.name;
    json config = base;
    for (const auto& o : common) apply(config, o, where);
    for (const auto& o : p.overrides) apply(config, o, where);
    apply(config, {"train.out_dir", p.dir}, where);
    run::RunConfig rc = run::parse_run_config(config, where);
    try {
      rc.validate(ranks);
    } catch (const Error& e) {
      fail("%s: %s", where.c_str(), e.what());
    }
    p.config = to_json(rc);
    p.steps = rc.train.steps;
  }
}

// parse_sweep without the file name in front of its errors. The steps run in the order of the
// file's sections so the first error reported is the same whatever else is wrong.
SweepSpec parse_sweep_object(const ordered_json& j, const std::string& base_dir,
                             const std::string& default_name, const std::string& out_override) {
  GOSSAMER_CHECK(j.is_object(), "expected a JSON object at the top level, found %s",
                 describe_json(j).c_str());
  check_keys(j, "",
             {"name", "base", "set", "grid", "points", "launcher", "out", "reference", "medians"});
  const ConfigKeys keys;
  SweepSpec spec;
  spec.name = j.contains("name") ? get_string(j["name"], "name") : default_name;
  check_name(spec.name, "name");
  const json base = read_base(j, base_dir);
  std::vector<SweepOverride> common;
  if (j.contains("set")) common = read_overrides(j["set"], "set", keys);
  SweepGrid grid;
  if (j.contains("grid")) grid = read_grid(j["grid"], keys);
  const std::vector<PointTemplate> templates = read_point_templates(j, grid, keys);
  spec.varied_keys = varied_keys(templates, grid);
  if (j.contains("launcher")) spec.launcher = read_launcher(j["launcher"]);
  spec.out = read_out(j, spec.name, out_override);
  spec.medians = read_medians(j);
  spec.points = expand_points(templates, grid, OverrideNamer(spec.varied_keys), spec.out);
  spec.reference = read_reference(j, spec.points);
  // Resolve and validate every point's config before anything runs.
  resolve_point_configs(spec.points, base, common, spec.launcher.ranks);
  return spec;
}

}  // namespace

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

const char* sweep_launcher_name(SweepLauncherKind kind) {
  switch (kind) {
    case SweepLauncherKind::PLAIN:
      return "plain";
    case SweepLauncherKind::MPIRUN:
      return "mpirun";
    case SweepLauncherKind::SLURM:
      return "slurm";
  }
  return "?";
}

std::string sanitize_point_name(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '=' || c == ',' || c == '+' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

std::string override_value_text(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

json config_value(const json& config, const std::string& dotted_key) {
  const json* node = &config;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted_key.find('.', start);
    if (!node->is_object()) return nullptr;
    auto it = node->find(dotted_key.substr(start, dot == std::string::npos ? dot : dot - start));
    if (it == node->end()) return nullptr;
    if (dot == std::string::npos) return *it;
    node = &*it;
    start = dot + 1;
  }
}

SweepSpec parse_sweep(const ordered_json& j, const std::string& source, const std::string& base_dir,
                      const std::string& default_name, const std::string& out_override) {
  try {
    SweepSpec spec = parse_sweep_object(j, base_dir, default_name, out_override);
    spec.source = source;
    return spec;
  } catch (const Error& e) {
    fail("%s: %s", source.c_str(), e.what());
  }
}

void check_sweep_data(const SweepSpec& spec) {
  std::set<std::string> checked;
  for (const auto& p : spec.points) {
    for (const char* key : {"data.train", "data.val"}) {
      const json v = config_value(p.config, key);
      const std::string pattern = v.is_string() ? v.get<std::string>() : "";
      if (pattern.empty() || !checked.insert(pattern).second) continue;
      try {
        data::expand_shard_patterns(pattern);
      } catch (const Error& e) {
        fail("%s: point %s: %s: %s", spec.source.c_str(), p.name.c_str(), key, e.what());
      }
    }
  }
}

SweepSpec load_sweep(const std::string& path, const std::string& out_override,
                     const std::vector<std::string>& sets) {
  ordered_json j = io::read_strict_json_file<ordered_json>(path, "sweep file");
  for (const std::string& assignment : sets) {
    const size_t eq = assignment.find('=');
    GOSSAMER_CHECK(eq != std::string::npos && eq > 0,
                   "--set %s: expected KEY=VALUE with a dotted key, e.g. optimizer.lr=3e-4",
                   assignment.c_str());
    const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
    ordered_json value = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) value = text;  // a bare word: a string
    GOSSAMER_CHECK(j.is_object(), "%s: expected a JSON object at the top level", path.c_str());
    const bool in_grid = j.contains("grid") && j["grid"].is_object() && j["grid"].contains(key);
    bool in_points = false;
    if (j.contains("points") && j["points"].is_array())
      for (const auto& p : j["points"])
        in_points = in_points || (p.is_object() && p.contains("set") && p["set"].is_object() &&
                                  p["set"].contains(key));
    GOSSAMER_CHECK(!in_grid && !in_points,
                   "--set %s: the sweep's %s %s, which would override this value; change it "
                   "in %s",
                   assignment.c_str(), in_grid ? "grid varies" : "points vary", key.c_str(),
                   path.c_str());
    j["set"][key] = value;
  }
  const fs::path p(path);
  return parse_sweep(j, path, p.parent_path().string(), sanitize_point_name(p.stem().string()),
                     out_override);
}

}  // namespace gossamer::sweep
