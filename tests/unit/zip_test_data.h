// Test data for the zip codec's tests: Gaussian bf16 and fp32 arrays (seeded), and damaged
// copies of a message or chunk (flipped bits, overwritten bytes, truncation, extension).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "core/bf16.h"

namespace gossamer::comm::zip {

inline std::vector<uint16_t> gaussian_bf16(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = float_to_bf16(dist(rng));
  return v;
}

inline std::vector<uint32_t> gaussian_f32(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = std::bit_cast<uint32_t>(dist(rng));
  return v;
}

// A damaged copy of msg: flipped bits, overwritten bytes, truncation, extension.
inline std::vector<uint8_t> damage(const std::vector<uint8_t>& msg, std::mt19937& rng) {
  std::vector<uint8_t> d = msg;
  switch (rng() % 5) {
    case 0:
      d[rng() % d.size()] ^= uint8_t(1u << (rng() % 8));
      break;
    case 1:
      for (int k = 0, m = 1 + int(rng() % 8); k < m; ++k)
        d[rng() % d.size()] ^= uint8_t(1 + rng() % 255);
      break;
    case 2:
      d.resize(rng() % d.size());
      break;
    case 3:
      d.resize(d.size() + 1 + rng() % 64, uint8_t(rng()));
      break;
    default: {  // a run of bytes overwritten
      const size_t at = rng() % d.size(), len = std::min<size_t>(1 + rng() % 40, d.size() - at);
      for (size_t i = 0; i < len; ++i) d[at + i] = uint8_t(rng());
    }
  }
  return d;
}

}  // namespace gossamer::comm::zip
