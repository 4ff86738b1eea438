// CRC-32C (Castagnoli) of a byte buffer, for detecting damaged compressed payloads (zip codec).
// Uses the SSE4.2 crc32 instruction when the build targets it, else a table (same values).
// Invariant: crc32c(data, n) equals the standard CRC-32C (check value 0xE3069283 for "123456789").
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::comm::zip {

// Continues a CRC over more bytes: crc32c(b, m, crc32c(a, n)) == crc32c(a ++ b, n + m).
uint32_t crc32c(const void* data, size_t bytes, uint32_t crc = 0);

// The byte-wise table (reflected polynomial 0x82F63B78): the portable code's CRC (GPU kernels).
const uint32_t* crc32c_table();

// "sse4.2" or "table": which implementation this build uses (logged by the benchmark).
const char* crc32c_implementation();

}  // namespace gossamer::comm::zip
