// Top-k selection, mask encodings and Jaccard overlap (see sparse_mask.h).
#include "optim/sparse_mask.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "core/error.h"

namespace gossamer::optim {

std::vector<uint32_t> top_k_indices(std::span<const float> scores, size_t k) {
  const size_t n = scores.size();
  GOSSAMER_CHECK(k <= n, "top-k: k = %zu of %zu scores", k, n);
  std::vector<uint32_t> out;
  if (k == 0) return out;
  out.reserve(k);
  if (k == n) {
    for (size_t i = 0; i < n; ++i) out.push_back(uint32_t(i));
    return out;
  }
  // The k-th largest value (NaN counts as the lowest), then every index above it and, in index
  // order, as many of the indices equal to it as still fit: exact k, ties to lower indices.
  std::vector<float> v(scores.begin(), scores.end());
  for (float& x : v)
    if (x != x) x = -std::numeric_limits<float>::infinity();
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(k - 1), v.end(), std::greater<float>());
  const float threshold = v[k - 1];
  size_t above = 0;
  for (size_t i = 0; i < n; ++i) above += scores[i] > threshold;
  size_t ties_left = k - above;
  for (size_t i = 0; i < n; ++i) {
    const float x = scores[i] != scores[i] ? -std::numeric_limits<float>::infinity() : scores[i];
    if (x > threshold || (x == threshold && ties_left > 0 && ties_left--))
      out.push_back(uint32_t(i));
  }
  return out;
}

size_t mask_bytes(MaskEncoding encoding, size_t k, size_t n) {
  return encoding == MaskEncoding::INDICES ? k * sizeof(uint32_t) : (n + 7) / 8;
}

MaskEncoding smaller_encoding(size_t k, size_t n) {
  return mask_bytes(MaskEncoding::BITMAP, k, n) < mask_bytes(MaskEncoding::INDICES, k, n)
             ? MaskEncoding::BITMAP
             : MaskEncoding::INDICES;
}

void encode_bitmap(std::span<const uint32_t> mask, size_t n, uint8_t* out) {
  std::fill(out, out + (n + 7) / 8, uint8_t(0));
  for (uint32_t i : mask) out[i / 8] = uint8_t(out[i / 8] | (1u << (i % 8)));
}

void decode_bitmap(const uint8_t* bits, size_t n, uint32_t base, std::vector<uint32_t>& out) {
  for (size_t byte = 0; byte < (n + 7) / 8; ++byte) {
    unsigned b = bits[byte];
    while (b) {
      const int bit = __builtin_ctz(b);
      out.push_back(base + uint32_t(byte * 8 + size_t(bit)));
      b &= b - 1;
    }
  }
}

double jaccard(std::span<const uint32_t> a, std::span<const uint32_t> b) {
  size_t i = 0, j = 0, both = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j])
      ++both, ++i, ++j;
    else if (a[i] < b[j])
      ++i;
    else
      ++j;
  }
  const size_t uni = a.size() + b.size() - both;
  return uni == 0 ? 1.0 : double(both) / double(uni);
}

}  // namespace gossamer::optim
