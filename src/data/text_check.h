// scan_text_file: how much of an input file is not text, measured before `prep` tokenises it,
// so that invalid UTF-8 (which the tokenizers replace by U+FFFD) is reported with counts and a
// file that is mostly not text (a binary, a compressed archive) is refused instead of being
// tokenised silently.
// Invariant: the counts depend only on the file's bytes, never on how it is read in chunks.
#pragma once

#include <cstdint>
#include <string>

namespace gossamer::data {

struct TextScan {
  uint64_t bytes = 0;
  // Maximal invalid subsequences (Unicode's "substitution of maximal subparts": each becomes
  // one U+FFFD when decoded).
  uint64_t invalid_sequences = 0;
  // Control characters other than tab, line feed, form feed and carriage return, NUL included.
  uint64_t control_bytes = 0;
  uint64_t first_invalid_offset = 0;  // meaningful when invalid_sequences > 0

  // (invalid sequences + control bytes) / bytes: 0 for clean text.
  double non_text_fraction() const;
};

// Files whose non-text fraction exceeds this are refused unless explicitly allowed.
inline constexpr double kMaxNonTextFraction = 0.10;

// Reads the file at `path` once; throws gossamer::Error naming it when it cannot be read.
TextScan scan_text_file(const std::string& path);

// The same over bytes in memory (one chunk).
TextScan scan_text(const void* data, size_t bytes);

}  // namespace gossamer::data
