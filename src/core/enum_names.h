// Names of enum values for configs and logs: a config option that is a word in JSON ("cosine",
// "bitmap") is an enum in C++, converted once at parse time. An enum opts in by specialising
// EnumNames<E> with a constexpr array `values` of {value, name} pairs; the config reader, the
// writer of resolved configs and the config reference then handle it like any other field.
// Invariant: names are unique per enum; enum_name() of a listed value never fails.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gossamer {

template <class E>
struct EnumNames;  // specialise: static constexpr std::pair<E, std::string_view> values[] = {...};

template <class E>
concept NamedEnum = requires {
  EnumNames<E>::values;
};

template <NamedEnum E>
std::string_view enum_name(E value) {
  for (const auto& [v, name] : EnumNames<E>::values)
    if (v == value) return name;
  return "?";
}

template <NamedEnum E>
std::optional<E> enum_from_name(std::string_view name) {
  for (const auto& [v, n] : EnumNames<E>::values)
    if (n == name) return v;
  return std::nullopt;
}

// "\"a\", \"b\" or \"c\"": the accepted names, for errors and docs.
template <NamedEnum E>
std::string enum_choices() {
  std::string out;
  const size_t n = std::size(EnumNames<E>::values);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += i + 1 == n ? " or " : ", ";
    // Appended piecewise: `"\"" + std::string(name) + "\""` trips GCC 12's -Wrestrict false
    // positive (PR 105651) at -O3.
    out += '"';
    out += EnumNames<E>::values[i].second;
    out += '"';
  }
  return out;
}

}  // namespace gossamer
