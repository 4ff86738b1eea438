// Strict reading of the JSON files a user writes (run configs, sweep files): one clear error
// naming the file for everything nlohmann::json would accept silently or report without it.
// Invariant: a document is returned only when it is valid JSON with no duplicate key in any
// object and every number representable; otherwise gossamer::Error names the file and, for a
// duplicate, the dotted path of the key ("FILE: duplicate key model.n_layer").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gossamer::io {

// Parses `text` (read from `source`, which only names it in errors).
template <class Json>
Json parse_strict_json(const std::string& text, const std::string& source);

// Reads and parses the file at `path`; `what` names its role in errors ("config file").
template <class Json>
Json read_strict_json_file(const std::string& path, const char* what);

}  // namespace gossamer::io
