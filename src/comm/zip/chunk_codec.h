// One chunk of the zip codec: a 16-byte header and a payload, encoded and decoded independently
// of every other chunk (so chunks run in parallel). Modes:
//   RAW     the elements verbatim (data that would not shrink);
//   ZERO    every element +0.0 (no payload);
//   DENSE   sign+mantissa raw (1 byte per bf16, 3 per fp32), then the escaped exponents (1 byte
//           each, in element order), then the exponent bits (codebook of exponent_model.h,
//           LSB-first): 4 streams, each coding a quarter of the elements and starting on a byte,
//           behind the bit counts of the first three (u32 each); 1 stream and no counts when
//           fewer than 4096 elements are coded;
//   SPARSE  which elements are not +0.0, as a bitmap stored two-level (a bit per byte of the
//           element bitmap, then only its nonzero bytes), then those elements coded as DENSE.
// Header: mode u8, base u8, book u16, escapes u32, bits u32 (of all exponent streams), crc u32
// (CRC-32C of the header with crc 0 and the payload; 0 when checksums are off).
// Invariants: a chunk never takes more than kChunkHeaderBytes + n * element size bytes; the
// decoder reads only inside the bytes it is given and writes only the n output elements, and
// every inconsistency it can see (sizes, counts, bits left over or missing, checksum) throws
// CorruptInput.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"
#include "kernels/zip/portable_chunk.h"

namespace gossamer::comm::zip {

// A compressed message that cannot be decoded (damaged, truncated, or not a zip message).
class CorruptInput : public Error {
 public:
  using Error::Error;
};

// ChunkMode, kChunkHeaderBytes: portable_chunk.h.
const char* chunk_mode_name(ChunkMode mode);

// What encoding one chunk produced (for the benchmark and the tests).
struct ChunkInfo {
  ChunkMode mode = ChunkMode::RAW;
  uint16_t book = 0;
  uint32_t escapes = 0;
  uint64_t exponent_bits = 0;
};

// Buffers one thread reuses across chunks (grown on demand, never shrunk).
struct ChunkScratch {
  std::vector<uint8_t> escapes, bits, streams, symbols, bitmap;
  std::vector<uint16_t> values16;  // gathered nonzero elements (bf16)
  std::vector<uint32_t> values32;  // (fp32)
};

// Largest encoded chunk of n elements.
inline size_t max_chunk_bytes(size_t n, DType dtype) {
  return kChunkHeaderBytes + n * dtype_size(dtype);
}

// Encodes n elements (bf16 or fp32 bit patterns) into out (at least max_chunk_bytes(n) bytes);
// returns the bytes written.
size_t encode_chunk(const void* in, size_t n, DType dtype, uint8_t* out, bool checksum,
                    ChunkScratch& scratch, ChunkInfo* info = nullptr);

// Decodes a chunk of `bytes` bytes holding n elements into out. Throws CorruptInput.
void decode_chunk(const uint8_t* in, size_t bytes, size_t n, DType dtype, void* out, bool checksum,
                  ChunkScratch& scratch);

}  // namespace gossamer::comm::zip
