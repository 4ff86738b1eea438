// The visitors that turn a config section's visit() list into strict JSON parsing, the
// resolved-config JSON and the reference docs (run/run_config.h describes the protocol a
// section's visit() follows). Generic over the section types, so that each layer can read and
// write its own section (model/model_config.h, run/run_config.cpp); header-only because the
// visitors are templates. A field type other than bool, numbers, strings and named enums says
// how it is read, written and named by specialising ConfigValue (optim/local_steps_config.h).
// Invariant: every key a reader accepts is a key its section declares; a key it does not know,
// a key that moved, a wrong JSON type, an out-of-range integer, an unknown enum name and a
// subsection the section does not use are errors naming the JSON path.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/error.h"

namespace gossamer::config_detail {

using nlohmann::json;

// Specialised for a field type of another layer: static std::string type_name(),
// static T from_json(const json&, const std::string& where), static json to_json(const T&).
template <class T>
struct ConfigValue;
template <class T>
concept CustomConfigValue = requires {
  ConfigValue<T>::type_name();
};

template <class T>
std::string type_name() {
  if constexpr (CustomConfigValue<T>)
    return ConfigValue<T>::type_name();
  else if constexpr (NamedEnum<T>)
    return "a string, one of " + enum_choices<T>();
  else if constexpr (std::is_same_v<T, bool>)
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

// The type column of the reference: "string", "number", ... ("string" for enums).
template <class T>
std::string doc_type() {
  if constexpr (NamedEnum<T>) return "string";
  const std::string t = type_name<T>();
  return t.substr(t.find(' ') + 1);
}

// A JSON value's kind, for messages, of a `json` or an `ordered_json`.
template <class Json>
const char* json_kind(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::string:
      return "string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    default:
      return "value";
  }
}

// What a value is, for messages: "null", "an object", "integer 12", "string \"x\"".
template <class Json>
std::string describe_json(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  return std::string(json_kind(j)) + " " + j.dump();
}

template <class T>
T convert(const json& j, const std::string& where) {
  auto mismatch = [&]() {
    fail("%s: expected %s, found %s", where.c_str(), type_name<T>().c_str(),
         describe_json(j).c_str());
  };
  if constexpr (CustomConfigValue<T>) {
    return ConfigValue<T>::from_json(j, where);
  } else if constexpr (NamedEnum<T>) {
    if (!j.is_string()) mismatch();
    const auto value = enum_from_name<T>(j.get<std::string>());
    if (!value) mismatch();
    return *value;
  } else if constexpr (std::is_same_v<T, bool>) {
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
    if (std::floor(x) != x) mismatch();
    if (x < (long double)std::numeric_limits<T>::min() ||
        x > (long double)std::numeric_limits<T>::max())
      fail("%s: expected %s from %lld to %llu, found %s, out of that range", where.c_str(),
           type_name<T>().c_str(), (long long)std::numeric_limits<T>::min(),
           (unsigned long long)std::numeric_limits<T>::max(), describe_json(j).c_str());
    return static_cast<T>(x);
  }
}

template <class T>
json to_json_value(const T& field) {
  if constexpr (CustomConfigValue<T>)
    return ConfigValue<T>::to_json(field);
  else if constexpr (NamedEnum<T>)
    return std::string(enum_name(field));
  else
    return field;
}

// Reads one section's fields from a JSON object; after visit(), check_unknown() rejects keys
// the section did not declare. `where` is "source: section" (or "source: section.sub").
struct SectionReader {
  const json& obj;
  std::string where;
  std::vector<std::string> known;
  std::vector<std::pair<std::string, std::string>> moved_keys;

  template <class T>
  void operator()(const char* key, T& field, std::string_view /*doc*/) {
    known.emplace_back(key);
    auto it = obj.find(key);
    if (it != obj.end()) field = convert<T>(*it, where + "." + key);
  }

  template <class S>
  void subsection(const char* key, S& sub, std::string_view /*doc*/,
                  const std::string& unused_reason) {
    known.emplace_back(key);
    auto it = obj.find(key);
    if (it == obj.end()) return;
    const std::string path = where + "." + key;
    GOSSAMER_CHECK(unused_reason.empty(), "%s: section not used: %s", path.c_str(),
                   unused_reason.c_str());
    read_section(*it, path, sub);
  }

  void moved(const char* old_key, const char* new_path) {
    moved_keys.emplace_back(old_key, new_path);
  }

  void check_unknown() const {
    for (const auto& [key, value] : obj.items()) {
      bool ok = false;
      for (const auto& k : known) ok = ok || k == key;
      if (ok) continue;
      for (const auto& [old_key, new_path] : moved_keys)
        GOSSAMER_CHECK(old_key != key, "%s.%s: this key moved to %s (set it there instead)",
                       where.c_str(), key.c_str(), new_path.c_str());
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail("%s.%s: unknown key (keys of %s: %s)", where.c_str(), key.c_str(),
           where.substr(where.rfind(' ') + 1).c_str(), list.c_str());
    }
  }

  template <class S>
  static void read_section(const json& j, const std::string& where, S& s) {
    GOSSAMER_CHECK(j.is_object(), "%s: expected an object, found %s", where.c_str(), json_kind(j));
    SectionReader r{j, where, {}, {}};
    s.visit(r);
    r.check_unknown();
  }
};

// Writes a section's fields (and the subsections in use) into a JSON object.
struct SectionWriter {
  json& obj;
  template <class T>
  void operator()(const char* key, T& field, std::string_view) {
    obj[key] = to_json_value(field);
  }
  template <class S>
  void subsection(const char* key, S& sub, std::string_view, const std::string& unused_reason) {
    if (!unused_reason.empty()) return;
    json child = json::object();
    SectionWriter w{child};
    sub.visit(w);
    obj[key] = std::move(child);
  }
  void moved(const char*, const char*) {}
};

// One markdown table row per key; subsections' keys follow with their dotted prefix.
struct DocSection {
  std::ostringstream& out;
  std::string prefix;  // "optimizer." or "optimizer.scape."
  template <class T>
  void operator()(const char* key, T& field, std::string_view doc) {
    std::string meaning(doc);
    if constexpr (NamedEnum<T>) meaning += " (one of " + enum_choices<T>() + ")";
    out << "| `" << prefix << key << "` | " << doc_type<T>() << " | `"
        << to_json_value(field).dump() << "` | " << meaning << " |\n";
  }
  template <class S>
  void subsection(const char* key, S& sub, std::string_view doc, const std::string&) {
    out << "| `" << prefix << key << "` | section | | " << doc << " |\n";
    DocSection d{out, prefix + key + "."};
    sub.visit(d);
  }
  void moved(const char*, const char*) {}
};

// Every leaf key's dotted path, subsections included whether in use or not.
struct KeyLister {
  std::vector<std::string>& out;
  std::string prefix;  // "optimizer." or "optimizer.scape."
  template <class T>
  void operator()(const char* key, T&, std::string_view) {
    out.push_back(prefix + key);
  }
  template <class S>
  void subsection(const char* key, S& sub, std::string_view, const std::string&) {
    KeyLister l{out, prefix + key + "."};
    sub.visit(l);
  }
  void moved(const char*, const char*) {}
};

// A section's JSON object (its fields and the subsections in use).
template <class S>
json section_to_json(S& section) {
  json obj = json::object();
  SectionWriter w{obj};
  section.visit(w);
  return obj;
}

// A section read strictly from a JSON object; `where` ("file: model") prefixes every error.
template <class S>
S section_from_json(const json& j, const std::string& where) {
  S section;
  SectionReader::read_section(j, where, section);
  return section;
}

}  // namespace gossamer::config_detail
