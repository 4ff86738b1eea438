// Lookup of the generated code-point class tables (unicode_tables.inc): a constant table for
// ASCII, binary search over sorted, disjoint ranges above it. The tables are constant data;
// nothing here is mutable.
#include "data/unicode_tables.h"

#include <algorithm>
#include <array>
#include <span>

namespace gossamer::data {
namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;
};

#include "data/unicode_tables.inc"

bool in_ranges(std::span<const CodePointRange> ranges, char32_t cp) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), cp,
                             [](char32_t c, const CodePointRange& r) { return c < r.first; });
  if (it == ranges.begin()) return false;
  --it;
  return cp <= it->last;
}

UnicodeClass classify_slow(char32_t cp) {
  if (in_ranges(kUnicodeLetterRanges, cp)) return UNICODE_CLASS_LETTER;
  if (in_ranges(kUnicodeNumberRanges, cp)) return UNICODE_CLASS_NUMBER;
  if (in_ranges(kUnicodeSpaceRanges, cp)) return UNICODE_CLASS_SPACE;
  return UNICODE_CLASS_OTHER;
}

constexpr std::array<UnicodeClass, 128> make_ascii_table() {
  std::array<UnicodeClass, 128> t{};
  for (char32_t c = 0; c < 128; ++c) {
    UnicodeClass k = UNICODE_CLASS_OTHER;
    for (const auto& r : kUnicodeLetterRanges)
      if (c >= r.first && c <= r.last) k = UNICODE_CLASS_LETTER;
    for (const auto& r : kUnicodeNumberRanges)
      if (c >= r.first && c <= r.last) k = UNICODE_CLASS_NUMBER;
    for (const auto& r : kUnicodeSpaceRanges)
      if (c >= r.first && c <= r.last) k = UNICODE_CLASS_SPACE;
    t[c] = k;
  }
  return t;
}

constexpr std::array<UnicodeClass, 128> kAsciiClass = make_ascii_table();

}  // namespace

UnicodeClass unicode_class(char32_t cp) {
  if (cp < 128) return kAsciiClass[cp];
  return classify_slow(cp);
}

const char* unicode_tables_version() {
  return kUnicodeTablesVersion;
}

}  // namespace gossamer::data
