// parse_strict_json / read_strict_json_file: duplicate keys found with the parser's callback,
// number overflow and syntax errors rethrown as gossamer::Error naming the file.
#include "io/json_file.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace gossamer::io {

namespace {

// Tracks, per open object, the keys seen so far and the key being parsed, so that a duplicate
// can be reported with its dotted path.
struct DuplicateKeyCheck {
  struct Level {
    std::set<std::string> keys;
    std::string current;
  };
  std::vector<Level> open;
  std::string duplicate;  // the dotted path of the first duplicate key, if any

  std::string path_to(const std::string& key) const {
    std::string p;
    for (const auto& l : open)
      if (&l != &open.back()) p += l.current + ".";
    return p + key;
  }
};

}  // namespace

template <class Json>
Json parse_strict_json(const std::string& text, const std::string& source) {
  DuplicateKeyCheck check;
  auto callback = [&check](int, typename Json::parse_event_t event, Json& parsed) {
    using E = typename Json::parse_event_t;
    if (event == E::object_start) check.open.emplace_back();
    if (event == E::object_end && !check.open.empty()) check.open.pop_back();
    if (event == E::array_start) check.open.push_back({{}, "[]"});
    if (event == E::array_end && !check.open.empty()) check.open.pop_back();
    if (event == E::key && !check.open.empty()) {
      const std::string key = parsed.template get<std::string>();
      if (!check.open.back().keys.insert(key).second && check.duplicate.empty())
        check.duplicate = check.path_to(key);
      check.open.back().current = key;
    }
    return true;
  };
  Json j;
  try {
    j = Json::parse(text, callback);
  } catch (const typename Json::out_of_range& e) {
    fail("%s: not valid JSON: a number does not fit (%s)", source.c_str(), e.what());
  } catch (const typename Json::exception& e) {
    fail("%s: not valid JSON: %s", source.c_str(), e.what());
  }
  GOSSAMER_CHECK(check.duplicate.empty(),
                 "%s: duplicate key %s (each key may appear once; JSON keeps only the last)",
                 source.c_str(), check.duplicate.c_str());
  return j;
}

template <class Json>
Json read_strict_json_file(const std::string& path, const char* what) {
  std::error_code ec;
  GOSSAMER_CHECK(!std::filesystem::is_directory(path, ec), "%s: is a directory, not a %s",
                 path.c_str(), what);
  std::ifstream in(path);
  GOSSAMER_CHECK(in.good(), "%s: cannot open %s", path.c_str(), what);
  std::stringstream ss;
  ss << in.rdbuf();
  GOSSAMER_CHECK(!in.bad(), "%s: read error", path.c_str());
  return parse_strict_json<Json>(ss.str(), path);
}

template nlohmann::json parse_strict_json<nlohmann::json>(const std::string&, const std::string&);
template nlohmann::ordered_json parse_strict_json<nlohmann::ordered_json>(const std::string&,
                                                                          const std::string&);
template nlohmann::json read_strict_json_file<nlohmann::json>(const std::string&, const char*);
template nlohmann::ordered_json read_strict_json_file<nlohmann::ordered_json>(const std::string&,
                                                                              const char*);

}  // namespace gossamer::io
