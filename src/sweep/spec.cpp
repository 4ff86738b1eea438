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

#include "core/error.h"
#include "data/loader.h"
#include "train/run_config.h"

namespace gossamer::sweep {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

constexpr size_t kMaxNameLength = 120;
// Files the sweep writes next to the point directories.
const char* const kReservedNames[] = {"summary.csv", "summary.md", "loss.png", "sweep.sbatch",
                                      "points.txt"};

const char* kind_of(const ordered_json& j) {
  switch (j.type()) {
    case ordered_json::value_t::null:
      return "null";
    case ordered_json::value_t::boolean:
      return "a boolean";
    case ordered_json::value_t::string:
      return "a string";
    case ordered_json::value_t::number_integer:
    case ordered_json::value_t::number_unsigned:
    case ordered_json::value_t::number_float:
      return "a number";
    case ordered_json::value_t::object:
      return "an object";
    case ordered_json::value_t::array:
      return "an array";
    default:
      return "a value";
  }
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

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
  GOSSAMER_CHECK(j.is_string(), "%s: expected a string, found %s %s", where.c_str(), kind_of(j),
                 j.dump().c_str());
  return j.get<std::string>();
}

std::vector<std::string> get_strings(const ordered_json& j, const std::string& where) {
  GOSSAMER_CHECK(j.is_array(), "%s: expected an array of strings, found %s", where.c_str(),
                 kind_of(j));
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
  std::vector<std::string> keys = train::config_key_paths();

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
                 where.c_str(), kind_of(j));
  std::vector<SweepOverride> out;
  for (const auto& [key, value] : j.items()) {
    const std::string path = where + "." + key;
    keys.check(key, path);
    GOSSAMER_CHECK(!value.is_null() && !value.is_object() && !value.is_array(),
                   "%s: expected a value (string, number or boolean), found %s", path.c_str(),
                   kind_of(value));
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

}  // namespace

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
    GOSSAMER_CHECK(j.is_object(), "expected a JSON object at the top level, found %s", kind_of(j));
    check_keys(
        j, "",
        {"name", "base", "set", "grid", "points", "launcher", "out", "reference", "medians"});
    const ConfigKeys keys;
    SweepSpec spec;
    spec.source = source;

    spec.name = j.contains("name") ? get_string(j["name"], "name") : default_name;
    check_name(spec.name, "name");

    // base: a path (relative to the sweep file) or an inline config object.
    GOSSAMER_CHECK(j.contains("base"),
                   "base: missing (a run config path, relative to the sweep file, or an inline "
                   "config object)");
    json base;
    std::string base_where = "base";
    if (j["base"].is_string()) {
      fs::path p = j["base"].get<std::string>();
      if (p.is_relative()) p = fs::path(base_dir) / p;
      std::ifstream in(p);
      GOSSAMER_CHECK(in.good(), "base: cannot open config file %s", p.string().c_str());
      std::stringstream ss;
      ss << in.rdbuf();
      try {
        base = json::parse(ss.str());
      } catch (const json::parse_error& e) {
        fail("base: %s: not valid JSON: %s", p.string().c_str(), e.what());
      }
      base_where = "base " + p.string();
    } else {
      GOSSAMER_CHECK(j["base"].is_object(),
                     "base: expected a config file path or a config object, found %s",
                     kind_of(j["base"]));
      base = to_plain(j["base"]);
    }
    GOSSAMER_CHECK(base.is_object(), "%s: expected a JSON object at the top level",
                   base_where.c_str());
    // The base itself must parse (unknown sections and keys are named in its own file).
    train::parse_run_config(base, base_where);

    std::vector<SweepOverride> common;
    if (j.contains("set")) common = read_overrides(j["set"], "set", keys);

    // grid: "key": [values...], cartesian product in the order written (first key slowest).
    std::vector<std::pair<std::string, std::vector<json>>> grid;
    if (j.contains("grid")) {
      const ordered_json& g = j["grid"];
      GOSSAMER_CHECK(g.is_object() && !g.empty(),
                     "grid: expected a non-empty object of \"section.key\": [values...], found %s",
                     g.is_object() ? "an empty object" : kind_of(g));
      for (const auto& [key, values] : g.items()) {
        const std::string path = "grid." + key;
        keys.check(key, path);
        GOSSAMER_CHECK(values.is_array() && !values.empty(),
                       "%s: expected a non-empty array of values, found %s", path.c_str(),
                       values.is_array() ? "an empty array" : kind_of(values));
        std::vector<json> vs;
        for (size_t i = 0; i < values.size(); ++i) {
          const ordered_json& v = values[i];
          GOSSAMER_CHECK(!v.is_null() && !v.is_object() && !v.is_array(),
                         "%s[%zu]: expected a value (string, number or boolean), found %s",
                         path.c_str(), i, kind_of(v));
          vs.push_back(to_plain(v));
        }
        grid.emplace_back(key, std::move(vs));
      }
    }

    std::vector<PointTemplate> templates;
    if (j.contains("points")) {
      const ordered_json& ps = j["points"];
      GOSSAMER_CHECK(ps.is_array() && !ps.empty(),
                     "points: expected a non-empty array of {\"name\", \"set\"} objects, found %s",
                     ps.is_array() ? "an empty array" : kind_of(ps));
      for (size_t i = 0; i < ps.size(); ++i) {
        PointTemplate t;
        t.where = "points[" + std::to_string(i) + "]";
        const ordered_json& p = ps[i];
        GOSSAMER_CHECK(p.is_object(), "%s: expected an object {\"name\", \"set\"}, found %s",
                       t.where.c_str(), kind_of(p));
        check_keys(p, t.where, {"name", "set"});
        if (p.contains("name"))
          t.name = check_name(get_string(p["name"], t.where + ".name"), t.where + ".name");
        if (p.contains("set")) t.set = read_overrides(p["set"], t.where + ".set", keys);
        for (const auto& [key, value] : t.set)
          for (const auto& [gkey, values] : grid)
            GOSSAMER_CHECK(key != gkey, "%s.set.%s: also a grid key (set it in one place)",
                           t.where.c_str(), key.c_str());
        templates.push_back(std::move(t));
      }
    } else {
      templates.push_back(PointTemplate{});
    }

    // Keys the points differ in, and their short display names (the last component when no
    // other varied key shares it).
    for (const auto& t : templates)
      for (const auto& [key, value] : t.set)
        if (std::find(spec.varied_keys.begin(), spec.varied_keys.end(), key) ==
            spec.varied_keys.end())
          spec.varied_keys.push_back(key);
    for (const auto& [key, values] : grid) spec.varied_keys.push_back(key);
    std::map<std::string, int> leaf_count;
    auto leaf = [](const std::string& k) { return k.substr(k.rfind('.') + 1); };
    for (const auto& k : spec.varied_keys) ++leaf_count[leaf(k)];
    auto short_key = [&](const std::string& k) { return leaf_count[leaf(k)] > 1 ? k : leaf(k); };
    auto describe = [&](const std::vector<SweepOverride>& os) {
      std::vector<std::string> parts;
      for (const auto& [k, v] : os) parts.push_back(short_key(k) + "=" + override_value_text(v));
      return join(parts, ",");
    };

    // launcher
    if (j.contains("launcher")) {
      const ordered_json& l = j["launcher"];
      GOSSAMER_CHECK(l.is_object(), "launcher: expected an object, found %s", kind_of(l));
      check_keys(l, "launcher", {"kind", "ranks", "args", "sbatch"});
      if (l.contains("kind")) {
        const std::string kind = get_string(l["kind"], "launcher.kind");
        if (kind == "plain")
          spec.launcher.kind = SweepLauncherKind::PLAIN;
        else if (kind == "mpirun")
          spec.launcher.kind = SweepLauncherKind::MPIRUN;
        else if (kind == "slurm")
          spec.launcher.kind = SweepLauncherKind::SLURM;
        else
          fail("launcher.kind: expected \"plain\", \"mpirun\" or \"slurm\", found \"%s\"",
               kind.c_str());
      }
      if (l.contains("ranks")) {
        const ordered_json& r = l["ranks"];
        GOSSAMER_CHECK(r.is_number_integer() && r.get<int64_t>() >= 1 && r.get<int64_t>() <= 65536,
                       "launcher.ranks: expected an integer >= 1, found %s", r.dump().c_str());
        spec.launcher.ranks = int(r.get<int64_t>());
      }
      if (l.contains("args")) spec.launcher.args = get_strings(l["args"], "launcher.args");
      if (l.contains("sbatch")) spec.launcher.sbatch = get_strings(l["sbatch"], "launcher.sbatch");
      GOSSAMER_CHECK(spec.launcher.kind != SweepLauncherKind::PLAIN ||
                         (spec.launcher.ranks == 1 && spec.launcher.args.empty()),
                     "launcher: kind \"plain\" runs one process without options; use kind "
                     "\"mpirun\" (or \"slurm\") for ranks and args");
      GOSSAMER_CHECK(spec.launcher.kind == SweepLauncherKind::SLURM || spec.launcher.sbatch.empty(),
                     "launcher.sbatch: only for kind \"slurm\"");
    }

    if (!out_override.empty())
      spec.out = out_override;
    else if (j.contains("out"))
      spec.out = get_string(j["out"], "out");
    else
      spec.out = "runs/sweeps/" + spec.name;
    GOSSAMER_CHECK(!spec.out.empty(), "out: must not be empty");

    spec.medians = {"bytes_sent"};
    if (j.contains("medians")) {
      spec.medians = get_strings(j["medians"], "medians");
      for (size_t i = 0; i < spec.medians.size(); ++i)
        GOSSAMER_CHECK(!spec.medians[i].empty(), "medians[%zu]: must not be empty", i);
    }

    // Expand: points outer, grid inner (first grid key slowest).
    size_t combos = 1;
    for (const auto& [key, values] : grid) combos *= values.size();
    std::set<std::string> names;
    std::map<std::string, std::string> name_origin;
    for (const auto& t : templates) {
      for (size_t c = 0; c < combos; ++c) {
        std::vector<SweepOverride> grid_part;
        size_t rest = c;
        for (size_t g = grid.size(); g-- > 0;) {
          const auto& values = grid[g].second;
          grid_part.insert(grid_part.begin(), {grid[g].first, values[rest % values.size()]});
          rest /= values.size();
        }
        SweepPoint p;
        p.overrides = t.set;
        p.overrides.insert(p.overrides.end(), grid_part.begin(), grid_part.end());
        std::string where = t.where;
        if (!grid_part.empty()) {
          if (!where.empty()) where += " x ";
          where += "grid " + describe(grid_part);
        }
        if (where.empty()) where = "base";
        std::vector<std::string> parts;
        const std::string head = t.name.empty() ? describe(t.set) : t.name;
        if (!head.empty()) parts.push_back(head);
        if (!grid_part.empty()) parts.push_back(describe(grid_part));
        p.name = parts.empty() ? "base" : sanitize_point_name(join(parts, ","));
        GOSSAMER_CHECK(p.name.size() <= kMaxNameLength && p.name[0] != '.',
                       "%s: derived point name \"%s\" is unusable (too long or starting with "
                       ".): give the points names",
                       where.c_str(), p.name.c_str());
        if (!names.insert(p.name).second)
          fail("%s: point name \"%s\" is already used by %s: give the points distinct names",
               where.c_str(), p.name.c_str(), name_origin[p.name].c_str());
        name_origin[p.name] = where;
        p.dir = (fs::path(spec.out) / p.name).string();
        spec.points.push_back(std::move(p));
      }
    }

    if (j.contains("reference")) {
      spec.reference = get_string(j["reference"], "reference");
      GOSSAMER_CHECK(names.count(spec.reference),
                     "reference: no point is named \"%s\" (points: %s)", spec.reference.c_str(),
                     join(std::vector<std::string>(names.begin(), names.end()), ", ").c_str());
    }

    // Resolve and validate every point's config before anything runs.
    for (auto& p : spec.points) {
      const std::string where = "point " + p.name;
      json config = base;
      for (const auto& o : common) apply(config, o, where);
      for (const auto& o : p.overrides) apply(config, o, where);
      apply(config, {"train.out_dir", p.dir}, where);
      train::RunConfig rc = train::parse_run_config(config, where);
      try {
        rc.validate(spec.launcher.ranks);
      } catch (const Error& e) {
        fail("%s: %s", where.c_str(), e.what());
      }
      p.config = to_json(rc);
      p.steps = rc.train.steps;
    }
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

SweepSpec load_sweep(const std::string& path, const std::string& out_override) {
  std::ifstream in(path);
  GOSSAMER_CHECK(in.good(), "%s: cannot open sweep file", path.c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  ordered_json j;
  try {
    j = ordered_json::parse(ss.str());
  } catch (const ordered_json::parse_error& e) {
    fail("%s: not valid JSON: %s", path.c_str(), e.what());
  }
  const fs::path p(path);
  return parse_sweep(j, path, p.parent_path().string(), sanitize_point_name(p.stem().string()),
                     out_override);
}

}  // namespace gossamer::sweep
