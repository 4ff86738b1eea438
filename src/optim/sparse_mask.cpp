// Top-k selection (kernels/cpu/sparse_select.h's), mask encodings and Jaccard overlap (see
// sparse_mask.h).
#include "optim/sparse_mask.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/cpu/sparse_select.h"

namespace gossamer::optim {

std::vector<uint32_t> top_k_indices(std::span<const float> scores, size_t k) {
  GOSSAMER_CHECK(k <= scores.size(), "top-k: k = %zu of %zu scores", k, scores.size());
  std::vector<uint32_t> out(k);
  kernels::cpu::top_k_indices(scores.data(), scores.size(), k, out.data());
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
