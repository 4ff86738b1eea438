// CRC-32C (see crc32c.h): hardware crc32 over 8-byte words when compiled for SSE4.2, otherwise a
// byte-wise table with the reflected polynomial 0x82F63B78.
#include "comm/zip/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace gossamer::comm::zip {

namespace {

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

const uint32_t* crc32c_table() {
  return crc_table().data();
}

uint32_t crc32c(const void* data, size_t bytes, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
#if defined(__SSE4_2__)
  uint64_t c64 = c;
  for (; bytes >= 8; bytes -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c64 = _mm_crc32_u64(c64, word);
  }
  c = uint32_t(c64);
  for (; bytes > 0; --bytes, ++p) c = _mm_crc32_u8(c, *p);
#else
  const auto& table = crc_table();
  for (; bytes > 0; --bytes, ++p) c = table[(c ^ *p) & 0xff] ^ (c >> 8);
#endif
  return ~c;
}

const char* crc32c_implementation() {
#if defined(__SSE4_2__)
  return "sse4.2";
#else
  return "table";
#endif
}

}  // namespace gossamer::comm::zip
