// Host copies of every table the portable chunk codec (portable_chunk.h) reads: each codebook's
// code lengths, codes and single-symbol decode table, laid out flat, the CRC-32C byte table and
// the codebook choice's thresholds. A backend that runs the codec elsewhere (a GPU) uploads them
// once and points a ZipTablesView at its copies.
// Invariant: built once per process from exponent_model.h's codebooks (the ones every message's
// fingerprint names), never changed after.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/zip/portable_chunk.h"

namespace gossamer::comm::zip {

struct ZipTables {
  std::vector<uint8_t> length;   // kNumCodebooks * kNumSymbols
  std::vector<uint16_t> code;    // kNumCodebooks * kNumSymbols
  std::vector<uint16_t> single;  // kNumCodebooks * kLutSize
  std::vector<uint32_t> crc;     // 256

  // The view of these host copies (the CPU reference kernels read them in place).
  ZipTablesView view() const;
};

// Every codebook's tables (all kNumCodebooks built on the first call).
const ZipTables& zip_tables();

}  // namespace gossamer::comm::zip
