// Dotted paths into nested JSON objects ("optimizer.scape.sparsity"), the way config keys are
// named everywhere (--set, sweep files, resume checks, metrics fields).
// Invariant: a path is found only through objects, one key per dot-separated part; anything
// else (a missing key, an array or value on the way) is "not found".
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace gossamer::io {

// The node at `dotted` in `j`, or nullptr.
const nlohmann::json* find_dotted(const nlohmann::json& j, std::string_view dotted);

}  // namespace gossamer::io
