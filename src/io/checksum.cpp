// checksum64 (see checksum.h).
#include "io/checksum.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace gossamer::io {

namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                   kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull,
                   kP5 = 0x27D4EB2F165667C5ull;
constexpr size_t kChunk = size_t{1} << 16;

inline uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}
inline uint64_t round(uint64_t acc, uint64_t input) {
  return rotl(acc + input * kP2, 31) * kP1;
}
inline uint64_t merge(uint64_t acc, uint64_t value) {
  return (acc ^ round(0, value)) * kP1 + kP4;
}
inline uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  return h ^ (h >> 32);
}

// xxHash64's structure over one chunk (seeded with its index, so equal chunks at different
// places differ).
uint64_t chunk_hash(const unsigned char* p, size_t n, uint64_t seed) {
  uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    v1 = round(v1, load64(p + i));
    v2 = round(v2, load64(p + i + 8));
    v3 = round(v3, load64(p + i + 16));
    v4 = round(v4, load64(p + i + 24));
  }
  uint64_t h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
  h = merge(merge(merge(merge(h, v1), v2), v3), v4) + uint64_t(n);
  for (; i + 8 <= n; i += 8) h = rotl(h ^ round(0, load64(p + i)), 27) * kP1 + kP4;
  for (; i < n; ++i) h = rotl(h ^ (uint64_t(p[i]) * kP5), 11) * kP1;
  return avalanche(h);
}

}  // namespace

uint64_t checksum64(const void* data, size_t bytes) {
  Checksum64Stream s;
  s.add(data, bytes);
  return s.value();
}

void Checksum64Stream::hash_chunks(const unsigned char* p, size_t chunks) {
  const size_t first = hashes_.size();
  hashes_.resize(first + chunks);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (size_t c = 0; c < chunks; ++c)
    hashes_[first + c] = chunk_hash(p + c * kChunk, kChunk, uint64_t(first + c));
}

void Checksum64Stream::add(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  bytes_ += bytes;
  if (!partial_.empty()) {  // fill the held chunk first
    const size_t take = std::min(bytes, kChunk - partial_.size());
    partial_.insert(partial_.end(), p, p + take);
    p += take;
    bytes -= take;
    if (partial_.size() < kChunk) return;
    hash_chunks(partial_.data(), 1);
    partial_.clear();
  }
  const size_t whole = bytes / kChunk;
  hash_chunks(p, whole);
  partial_.assign(p + whole * kChunk, p + bytes);
}

uint64_t Checksum64Stream::value() const {
  uint64_t h = kP5 + bytes_;
  for (uint64_t c : hashes_) h = merge(h, c);
  if (!partial_.empty())
    h = merge(h, chunk_hash(partial_.data(), partial_.size(), uint64_t(hashes_.size())));
  return avalanche(h);
}

std::string checksum_hex(uint64_t checksum) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(checksum));
  return buf;
}

}  // namespace gossamer::io
