// bfloat16 <-> float conversions: one rounding rule (bf16_bits_of, __host__ __device__) for the
// to_bf16 ops (the CPU op and the CUDA kernel), the communication backends (reductions of bf16
// payloads run in fp32), the benchmarks and the tests. A bf16 value is the upper 16 bits of an IEEE
// fp32; float -> bf16 rounds to nearest, ties to even, and keeps NaNs NaN.
#pragma once

#include <cstdint>
#include <cstring>

#ifndef GOSSAMER_HOST_DEVICE
#if defined(__CUDACC__)
#define GOSSAMER_HOST_DEVICE __host__ __device__
#else
#define GOSSAMER_HOST_DEVICE
#endif
#endif

namespace gossamer {

// The rounding rule on the bits of an fp32: the one definition, for host and device code.
GOSSAMER_HOST_DEVICE inline uint16_t bf16_bits_of(uint32_t bits) {
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return uint16_t((bits >> 16) | 0x0040u);  // NaN: keep it a (quiet) NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float bf16_to_float(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bf16_bits_of(bits);
}

}  // namespace gossamer
