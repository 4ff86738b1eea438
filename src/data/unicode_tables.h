// Code-point classes for GPT-2's pre-tokenisation pattern: letter (\p{L}), number (\p{N}) and
// white space (\s), exactly as Node's regex engine classifies them (tables generated from Node
// by scripts/gen_unicode_tables.js into unicode_tables.inc). Invariant: the three classes are
// disjoint, so a code point has at most one class; everything else is UNICODE_CLASS_OTHER.
#pragma once

#include <cstdint>

namespace gossamer::data {

enum UnicodeClass : uint8_t {
  UNICODE_CLASS_OTHER = 0,
  UNICODE_CLASS_LETTER = 1,  // \p{L}
  UNICODE_CLASS_NUMBER = 2,  // \p{N}
  UNICODE_CLASS_SPACE = 3,   // \s (JavaScript's WhiteSpace and LineTerminator)
};

UnicodeClass unicode_class(char32_t cp);

// The Unicode version of the Node that generated the tables (process.versions.unicode).
const char* unicode_tables_version();

}  // namespace gossamer::data
