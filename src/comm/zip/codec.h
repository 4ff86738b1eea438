// The zip codec: lossless compression of bf16 and fp32 arrays for communication (ZipCCL-style:
// sign and mantissa raw, exponents entropy-coded with a codebook chosen from a model of the
// values, exact zeros nearly free). A message is a 32-byte header (magic "GPZ1", version, dtype,
// flags, chunk size, chunk count, element count, codebook fingerprint, CRC-32C of the header and
// the size table), a table of each chunk's encoded size (u32), and the chunks (chunk_codec.h),
// encoded and decoded in parallel (OpenMP, one chunk per task).
// Invariants: decompress(compress(x)) == x bit for bit, for every bit pattern; a message never
// exceeds max_compressed_bytes; the decoder validates every size before reading and reads and
// writes only inside the spans it is given; any damage it can detect throws CorruptInput naming
// the chunk (with checksums on, which is the default, every changed or missing byte is detected
// up to CRC-32C's collision rate).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "comm/zip/chunk_codec.h"

namespace gossamer::comm::zip {

inline constexpr size_t kDefaultChunkElems = 16384;
inline constexpr size_t kMessageHeaderBytes = 32;

struct CodecOptions {
  size_t chunk_elems = kDefaultChunkElems;  // 1 .. 2^24
  bool checksum = true;                     // CRC-32C per chunk
  int threads = 0;                          // 0: OpenMP's default
};

// What compress() produced (optional).
struct CodecStats {
  size_t chunks = 0;
  std::array<size_t, kNumChunkModes> chunks_by_mode{};  // index: ChunkMode - 1
  uint64_t escapes = 0;
  uint64_t exponent_bits = 0;  // of DENSE and SPARSE chunks
};

// Bytes that compress() may write for n elements (the buffer to give it).
size_t max_compressed_bytes(size_t n, DType dtype, size_t chunk_elems = kDefaultChunkElems);

// Compresses n bf16 or fp32 elements into out (at least max_compressed_bytes bytes); returns the
// message's size.
size_t compress(const void* in, size_t n, DType dtype, std::span<uint8_t> out,
                const CodecOptions& options = {}, CodecStats* stats = nullptr);

// Decodes a message of exactly n elements of dtype into out. Throws CorruptInput.
void decompress(std::span<const uint8_t> in, void* out, size_t n, DType dtype, int threads = 0);

// Decodes a message of n elements and accumulates it in fp32: acc[i] = value[i] when assign,
// else acc[i] += value[i] (one addition per element, so a fixed call order fixes the sum).
void decompress_accumulate(std::span<const uint8_t> in, float* acc, size_t n, DType dtype,
                           bool assign, int threads = 0);

// ---- The message's header and size table alone (DeviceZipCodec: its chunks live elsewhere) ----

// Completes a message's head: `head` holds the kMessageHeaderBytes header, then the size table
// (one u32 per chunk, filled by the caller); writes the header (its checksum covers the table)
// and returns the message's size.
size_t write_message_head(uint8_t* head, size_t n, DType dtype, size_t chunk_elems, bool checksum);

// The bytes of a message's header and size table, from its first kMessageHeaderBytes bytes and
// its size. Throws CorruptInput when the message cannot hold them.
size_t message_head_bytes(std::span<const uint8_t> header, size_t message_bytes);

struct MessageLayout {
  size_t chunk_elems = 0, chunks = 0;
  bool checksum = false;
  std::vector<uint64_t> offsets;  // chunk c at [offsets[c], offsets[c + 1]); back: the size
};

// Checks a message's header and size table (head: at least its first message_head_bytes bytes)
// for n elements of dtype and a message of message_bytes bytes; throws CorruptInput naming what
// is wrong.
MessageLayout parse_message_head(std::span<const uint8_t> head, size_t message_bytes, size_t n,
                                 DType dtype);

}  // namespace gossamer::comm::zip
