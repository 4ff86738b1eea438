// Bounded, strict reading of the small files a user gives (run configs, sweep files,
// trainer.json, an HF directory's config.json): one clear error naming the file for everything
// nlohmann::json would accept silently or report without it, and for files that are not files.
// Invariant: read_user_file returns the content of a regular file of at most max_bytes, or
// throws naming the file and the reason (a directory, a device such as /dev/zero, a FIFO, a
// symbolic-link loop, too large, unreadable) -- it never blocks on a FIFO nor reads without end.
// A document is returned only when it is valid JSON with no duplicate key in any object and
// every number representable ("FILE: duplicate key model.n_layer").
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace gossamer::io {

// The largest config-like file read (16 MiB: a run config is a few KB).
constexpr size_t kMaxUserFileBytes = size_t(16) << 20;

// The content of the regular file at `path`; `what` names its role in errors ("config file").
std::string read_user_file(const std::string& path, const char* what,
                           size_t max_bytes = kMaxUserFileBytes);
// Throws naming `what` unless `path` is a regular file (symbolic links followed) that can be
// opened for reading: for readers that stream a file themselves (text inputs, shards).
void check_regular_file(const std::string& path, const char* what);

// read_user_file, then parsed leniently (files other programs write: an HF config.json,
// trainer.json); throws naming the file unless it holds a JSON object.
nlohmann::json read_json_object(const std::string& path, const char* what);

// Parses `text` (read from `source`, which only names it in errors).
template <class Json>
Json parse_strict_json(const std::string& text, const std::string& source);

// Reads and parses the file at `path`; `what` names its role in errors ("config file").
template <class Json>
Json read_strict_json_file(const std::string& path, const char* what);

}  // namespace gossamer::io
