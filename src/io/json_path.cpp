// Dotted paths into nested JSON objects (json_path.h).
#include "io/json_path.h"

#include <string>

namespace gossamer::io {

const nlohmann::json* find_dotted(const nlohmann::json& j, std::string_view dotted) {
  const nlohmann::json* node = &j;
  while (true) {
    if (!node->is_object()) return nullptr;
    const size_t dot = dotted.find('.');
    auto it = node->find(std::string(dotted.substr(0, dot)));
    if (it == node->end()) return nullptr;
    node = &*it;
    if (dot == std::string_view::npos) return node;
    dotted.remove_prefix(dot + 1);
  }
}

}  // namespace gossamer::io
