// checksum64: a fast, deterministic 64-bit checksum of a byte buffer, for detecting damaged
// files (a flipped bit, a torn write), not for security. The buffer is cut into 64 KiB chunks;
// each chunk is hashed with xxHash64's round function over 32-byte blocks (four 64-bit lanes)
// plus its tail, and the chunk hashes are folded in order. Chunks are hashed in parallel
// (OpenMP), so it runs at memory speed.
// Invariant: the value depends only on the bytes (not on the thread count or the alignment);
// any single flipped bit changes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gossamer::io {

uint64_t checksum64(const void* data, size_t bytes);

// checksum64 of bytes that arrive in pieces of any sizes: add() them in order, then value()
// equals checksum64 of their concatenation. Whole 64 KiB chunks are hashed as they arrive (in
// parallel), a partial chunk is held until it fills; memory: 64 KiB plus 8 bytes per chunk.
class Checksum64Stream {
 public:
  void add(const void* data, size_t bytes);
  uint64_t value() const;

 private:
  void hash_chunks(const unsigned char* p, size_t chunks);
  std::vector<uint64_t> hashes_;  // of the whole chunks so far, in order
  std::vector<unsigned char> partial_;
  uint64_t bytes_ = 0;
};

// "0123456789abcdef": 16 lower-case hex digits.
std::string checksum_hex(uint64_t checksum);

// The name of the algorithm, stored next to the checksums so a future change is detectable.
inline constexpr const char* kChecksumAlgorithm = "gossamer-xxh64-chunked-64KiB-v1";

}  // namespace gossamer::io
