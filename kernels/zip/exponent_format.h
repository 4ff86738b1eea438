// The zip codec's exponent symbols and table layouts (comm/zip/exponent_model.h builds the
// tables; docs/COMM.md describes the codec): constants, a chunk's exponent statistics, a
// codebook choice and a codebook's encode and decode tables. Plain data and constexpr, for host
// and device code alike: the portable chunk code (portable_chunk.h) that the CPU codec and the
// zip kernels run reads nothing else. Namespace comm::zip: the format is the codec's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gossamer::comm::zip {

inline constexpr int kWindowBelow = 24;
inline constexpr int kWindowAbove = 7;
inline constexpr int kSymEscape = 0;
inline constexpr int kSymExp0 = 1;
inline constexpr int kSymWindow0 = 2;  // symbol of exponent base - kWindowBelow
inline constexpr int kNumSymbols = kSymWindow0 + kWindowBelow + 1 + kWindowAbove;
inline constexpr int kMaxCodeBits = 12;
inline constexpr int kLutSize = 1 << kMaxCodeBits;
// A multi-symbol decode entry holds up to this many symbols.
inline constexpr int kMaxSymbolsPerEntry = 6;

inline constexpr int kLocationLevels = 8;  // eighths of a binade
inline constexpr int kSpreadLevels = 8;    // 0: Gaussian model; 1..7: log-normal, wider each
inline constexpr int kZeroLevels = 5;      // share of exponent-0 values
inline constexpr int kNumCodebooks = kLocationLevels * kSpreadLevels * kZeroLevels;

// Exponent statistics of one chunk (one pass; see gather in chunk_codec.cpp).
struct ExponentStats {
  uint64_t count = 0;                         // elements
  uint64_t exp0 = 0;                          // exponent field 0 (zeros of either sign, subnormals)
  uint64_t normal = 0;                        // exponent field 1..254
  uint64_t sum = 0;                           // of the exponent fields of normal elements
  uint64_t sum_sq = 0;                        // of their squares
  uint64_t exact_zero = 0;                    // all bits zero (+0.0)
  uint32_t min_normal = 255, max_normal = 0;  // range of the normal exponent fields
};

struct CodebookChoice {
  uint16_t book = 0;  // < kNumCodebooks
  uint8_t base = 0;   // exponent field of symbol kSymWindow0 + kWindowBelow
};

// The thresholds the choice compares a chunk's statistics with (see choose_codebook).
struct CodebookChoiceParams {
  double zero_below[kZeroLevels - 1] = {};  // zero level l when the exp-0 share is below [l]
  double spread_above = 0;  // a log-normal model (level >= 1) above this exponent std. dev.
  double spread_at_least[kSpreadLevels] = {};  // level l >= 2 from [l] up (level 1 below [2])
};

struct DecodeEntry {
  uint8_t symbols[kMaxSymbolsPerEntry];
  uint8_t count;  // symbols decoded by this entry (1..kMaxSymbolsPerEntry)
  uint8_t bits;   // bits consumed
};

struct Codebook {
  std::array<uint8_t, kNumSymbols> length{};
  std::array<uint16_t, kNumSymbols> code{};  // bit-reversed: the first bit is bit 0
  // Indexed by the next kMaxCodeBits bits of the stream (bit 0 first).
  std::array<DecodeEntry, kLutSize> multi{};
  std::array<uint16_t, kLutSize> single{};  // symbol | length << 8
};

// Exponent field of a window symbol for a base, or -1 when it falls outside 1..254 (unused).
inline int window_exponent(int symbol, int base) {
  const int e = base + (symbol - kSymWindow0) - kWindowBelow;
  return e >= 1 && e <= 254 ? e : -1;
}

}  // namespace gossamer::comm::zip
