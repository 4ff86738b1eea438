// Strict JSON <-> RunConfig, driven by the sections' visit() lists (see run_config.h).
#include "run/run_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "comm/sim_rates_value.h"
#include "core/config_visitors.h"
#include "core/error.h"
#include "io/json_file.h"
#include "optim/local_steps_value.h"
#include "run/resume_check.h"

namespace gossamer::run {

using nlohmann::json;

namespace {

using config_detail::json_kind;
using config_detail::SectionReader;

struct ConfigReader {
  const json& root;
  std::string source;
  std::vector<std::string> sections;

  template <class S>
  void section(const char* name, S& s) {
    sections.emplace_back(name);
    auto it = root.find(name);
    if (it != root.end()) SectionReader::read_section(*it, source + ": " + name, s);
  }
};

struct ConfigWriter {
  json& root;
  template <class S>
  void section(const char* name, S& s) {
    root[name] = config_detail::section_to_json(s);
  }
};

struct DocWriter {
  std::ostringstream& out;
  template <class S>
  void section(const char* name, S& s) {
    out << "\n## `" << name << "`\n\n| key | type | default | meaning |\n|---|---|---|---|\n";
    config_detail::DocSection d{out, std::string(name) + "."};
    s.visit(d);
  }
};

void apply_override(json& root, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  GOSSAMER_CHECK(eq != std::string::npos && eq > 0,
                 "--set %s: expected KEY=VALUE with a dotted key, e.g. optimizer.lr=3e-4",
                 assignment.c_str());
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = text;
  GOSSAMER_CHECK(!value.is_object(),
                 "--set %s: a value may not be an object (it would replace the whole section); "
                 "set its keys one by one, e.g. --set %s.KEY=VALUE",
                 assignment.c_str(), key.c_str());
  json* node = &root;
  size_t start = 0;
  while (true) {
    size_t dot = key.find('.', start);
    std::string part =
        key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    GOSSAMER_CHECK(!part.empty(), "--set %s: empty component in key %s", assignment.c_str(),
                   key.c_str());
    if (dot == std::string::npos) {
      (*node)[part] = value;
      return;
    }
    json& child = (*node)[part];
    if (child.is_null()) child = json::object();
    GOSSAMER_CHECK(child.is_object(), "--set %s: %s is not a section", assignment.c_str(),
                   key.substr(0, dot).c_str());
    node = &child;
    start = dot + 1;
  }
}

}  // namespace

RunConfig parse_run_config(const json& j, const std::string& source) {
  GOSSAMER_CHECK(j.is_object(), "%s: expected a JSON object at the top level, found %s",
                 source.c_str(), json_kind(j));
  RunConfig c;
  ConfigReader reader{j, source, {}};
  c.visit_sections(reader);
  // Defaults that follow another key are resolved here, so a run's saved config holds values.
  if (c.optimizer.scape.dense_warmup_steps == optim::ScapeConfig::kDenseWarmupFromSchedule)
    c.optimizer.scape.dense_warmup_steps = c.schedule.warmup_steps;
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const auto& s : reader.sections) ok = ok || s == key;
    if (!ok) {
      std::string list;
      for (const auto& s : reader.sections) list += (list.empty() ? "" : ", ") + s;
      fail("%s: %s: unknown section (sections: %s)", source.c_str(), key.c_str(), list.c_str());
    }
  }
  return c;
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides,
                          int world) {
  json j = io::read_strict_json_file<json>(path, "config file");
  if (!j.is_object()) fail("%s: expected a JSON object at the top level", path.c_str());
  for (const auto& o : overrides) apply_override(j, o);
  RunConfig c = parse_run_config(j, path);
  try {
    c.validate(world);
  } catch (const Error& e) {
    fail("%s: %s", path.c_str(), e.what());
  }
  return c;
}

struct KeyListWriter {
  std::vector<std::string>& out;
  template <class S>
  void section(const char* name, S& s) {
    config_detail::KeyLister l{out, std::string(name) + "."};
    s.visit(l);
  }
};

std::vector<std::string> config_key_paths() {
  std::vector<std::string> out;
  RunConfig c;
  KeyListWriter w{out};
  c.visit_sections(w);
  return out;
}

void migrate_legacy_config(json& config) {
  if (!config.is_object() || !config.contains("optimizer") || !config["optimizer"].is_object())
    return;
  json& opt = config["optimizer"];
  optim::OptimizerConfig method;
  if (opt.contains("name") && opt["name"].is_string()) method.name = opt["name"].get<std::string>();
  for (const auto& [old_key, new_path] : optim::OptimizerConfig::kMovedKeys) {
    if (!opt.contains(old_key)) continue;
    json value = opt[old_key];
    opt.erase(old_key);
    // "optimizer.SECTION.KEY": kept where the method reads SECTION, dropped elsewhere (resolved
    // configs of old runs list every flat key, also those of other methods).
    const std::string rest = std::string(new_path).substr(std::string("optimizer.").size());
    const std::string section = rest.substr(0, rest.find('.'));
    const std::string key = rest.substr(rest.find('.') + 1);
    if (!method.section_unused_reason(section).empty()) continue;
    if (!opt.contains(section) || !opt[section].is_object()) opt[section] = json::object();
    opt[section][key] = std::move(value);
  }
}

json to_json(RunConfig& config) {
  json root = json::object();
  ConfigWriter w{root};
  config.visit_sections(w);
  return root;
}

std::string config_reference_markdown() {
  std::ostringstream out;
  out << "# Run configuration reference\n\n"
         "Generated by `gossamer config-reference`; every key, its type, default and meaning.\n"
         "Unknown keys and wrong types are errors that name the JSON path. Override any key\n"
         "from the command line with `--set section.key=value`.\n";
  RunConfig c;
  DocWriter d{out};
  c.visit_sections(d);
  return out.str();
}

int64_t RunConfig::grad_accum_steps(int world) const {
  const int64_t per_micro = int64_t(data.micro_batch) * data.seq_len * world;
  return train.global_batch_tokens == 0 ? 1 : train.global_batch_tokens / per_micro;
}

void RunConfig::validate(int world) const {
  model.validate("model.");
  optimizer.validate("optimizer.");
  parallel.validate("parallel.");
  schedule.validate("schedule.");
  GOSSAMER_CHECK(!data.train.empty(), "data.train: must name at least one shard");
  GOSSAMER_CHECK(data.seq_len >= 1 && data.seq_len <= model.max_seq_len,
                 "data.seq_len: must lie in [1, model.max_seq_len=%d], found %d", model.max_seq_len,
                 data.seq_len);
  GOSSAMER_CHECK(data.micro_batch >= 1, "data.micro_batch: must be >= 1, found %d",
                 data.micro_batch);
  GOSSAMER_CHECK(train.steps >= 1, "train.steps: must be >= 1, found %lld", (long long)train.steps);
  const int64_t per_micro = int64_t(data.micro_batch) * data.seq_len * world;
  GOSSAMER_CHECK(train.global_batch_tokens >= 0 && train.global_batch_tokens % per_micro == 0,
                 "train.global_batch_tokens: must be a non-negative multiple of "
                 "data.micro_batch * data.seq_len * ranks = %d * %d * %d = %lld, found %lld",
                 data.micro_batch, data.seq_len, world, (long long)per_micro,
                 (long long)train.global_batch_tokens);
  for (auto [key, value] : {std::pair{"eval_every", train.eval_every},
                            {"eval_batches", train.eval_batches},
                            {"eval_replica_batches", train.eval_replica_batches},
                            {"checkpoint_every", train.checkpoint_every},
                            {"keep_checkpoints", train.keep_checkpoints},
                            {"sample_every", train.sample_every}})
    GOSSAMER_CHECK(value >= 0, "train.%s: must be >= 0, found %lld", key, (long long)value);
  GOSSAMER_CHECK(train.log_every >= 1, "train.log_every: must be >= 1, found %lld",
                 (long long)train.log_every);
  GOSSAMER_CHECK(train.sample_tokens >= 1, "train.sample_tokens: must be >= 1");
  GOSSAMER_CHECK(!train.out_dir.empty(), "train.out_dir: must not be empty");
  kernels.validate("kernels.");
  GOSSAMER_CHECK(metrics.peak_gflops >= 0, "metrics.peak_gflops: must be >= 0");
}

namespace {

// Collects the sections' resume_keys() under their dotted prefix, walking the subsections.
struct ResumeKeyCollector {
  ResumeKeys& out;
  std::string prefix;  // "optimizer.scape."

  template <class T>
  void added_later(const char* key, const T& value) {
    out.before[prefix + key] = config_detail::to_json_value(value);
  }
  void harmless(const char* key) { out.harmless.push_back(prefix + key); }
  void harmless_section() { out.harmless_sections.push_back(prefix); }

  template <class S>
  void collect(S& section) {
    if constexpr (requires { S::resume_keys(*this); }) S::resume_keys(*this);
    section.visit(*this);
  }
  // The visitor protocol (run_config.h): fields say nothing; subsections are walked.
  template <class T>
  void operator()(const char*, T&, std::string_view) {}
  template <class S>
  void subsection(const char* key, S& sub, std::string_view, const std::string&) {
    ResumeKeyCollector{out, prefix + key + "."}.collect(sub);
  }
  void moved(const char*, const char*) {}
  template <class S>
  void section(const char* name, S& s) {
    ResumeKeyCollector{out, std::string(name) + "."}.collect(s);
  }
};

ResumeKeys collect_resume_keys() {
  ResumeKeys r;
  RunConfig defaults;
  ResumeKeyCollector collector{r, ""};
  defaults.visit_sections(collector);
  const std::vector<std::string> keys = config_key_paths();
  auto known = [&](const std::string& k) {
    return std::find(keys.begin(), keys.end(), k) != keys.end();
  };
  for (const auto& [key, value] : r.before)
    GOSSAMER_CHECK(known(key), "resume_keys: added_later(\"%s\") is not a config key", key.c_str());
  for (const std::string& key : r.harmless)
    GOSSAMER_CHECK(known(key), "resume_keys: harmless(\"%s\") is not a config key", key.c_str());
  return r;
}

}  // namespace

const ResumeKeys& resume_keys() {
  static const ResumeKeys keys = collect_resume_keys();
  return keys;
}

}  // namespace gossamer::run
