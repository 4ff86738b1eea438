// Strict JSON <-> RunConfig, driven by the sections' visit() lists (see run_config.h).
#include "train/run_config.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace gossamer::train {

using nlohmann::json;

namespace {

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "a boolean";
  else if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else if constexpr (std::is_floating_point_v<T>)
    return "a number";
  else if constexpr (std::is_unsigned_v<T>)
    return "a non-negative integer";
  else
    return "an integer";
}

const char* json_kind(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    default:
      return "value";
  }
}

template <class T>
T convert(const json& j, const std::string& where) {
  auto mismatch = [&]() {
    fail("%s: expected %s, found %s %s", where.c_str(), type_name<T>(), json_kind(j),
         j.dump().c_str());
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) mismatch();
    return j.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) mismatch();
    return j.get<std::string>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) mismatch();
    return j.get<T>();
  } else {
    if (!j.is_number()) mismatch();
    long double x = j.is_number_float()      ? (long double)j.get<double>()
                    : j.is_number_unsigned() ? (long double)j.get<uint64_t>()
                                             : (long double)j.get<int64_t>();
    if (std::floor(x) != x || x < (long double)std::numeric_limits<T>::min() ||
        x > (long double)std::numeric_limits<T>::max())
      mismatch();
    return static_cast<T>(x);
  }
}

// Reads one section's fields from a JSON object, remembering which keys it knows.
struct SectionReader {
  const json& obj;
  std::string prefix;  // "source: section."
  std::vector<std::string> known;

  template <class T>
  void operator()(const char* key, T& field, const char* /*doc*/) {
    known.emplace_back(key);
    auto it = obj.find(key);
    if (it != obj.end()) field = convert<T>(*it, prefix + key);
  }
};

struct ConfigReader {
  const json& root;
  std::string source;
  std::vector<std::string> sections;

  template <class S>
  void section(const char* name, S& s) {
    sections.emplace_back(name);
    auto it = root.find(name);
    if (it == root.end()) return;
    const std::string where = source + ": " + name;
    GOSSAMER_CHECK(it->is_object(), "%s: expected an object, found %s", where.c_str(),
                   json_kind(*it));
    SectionReader r{*it, where + ".", {}};
    s.visit(r);
    for (const auto& [key, value] : it->items()) {
      bool ok = false;
      for (const auto& k : r.known) ok = ok || k == key;
      if (!ok) {
        std::string list;
        for (const auto& k : r.known) list += (list.empty() ? "" : ", ") + k;
        fail("%s.%s: unknown key (keys of %s: %s)", where.c_str(), key.c_str(), name, list.c_str());
      }
    }
  }
};

struct SectionWriter {
  json& obj;
  template <class T>
  void operator()(const char* key, T& field, const char*) {
    obj[key] = field;
  }
};

struct ConfigWriter {
  json& root;
  template <class S>
  void section(const char* name, S& s) {
    json obj = json::object();
    SectionWriter w{obj};
    s.visit(w);
    root[name] = std::move(obj);
  }
};

struct DocSection {
  std::ostringstream& out;
  std::string name;
  template <class T>
  void operator()(const char* key, T& field, const char* doc) {
    json value = field;
    const std::string type = type_name<T>();  // without its article
    out << "| `" << name << "." << key << "` | " << type.substr(type.find(' ') + 1) << " | `"
        << value.dump() << "` | " << doc << " |\n";
  }
};

struct DocWriter {
  std::ostringstream& out;
  template <class S>
  void section(const char* name, S& s) {
    out << "\n## `" << name << "`\n\n| key | type | default | meaning |\n|---|---|---|---|\n";
    DocSection d{out, name};
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
  std::ifstream in(path);
  GOSSAMER_CHECK(in.good(), "%s: cannot open config file", path.c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    fail("%s: not valid JSON: %s", path.c_str(), e.what());
  }
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

}  // namespace gossamer::train
