// Sparse masks over a slice of the flat parameter space, for SCAPE: exact top-k selection with
// a deterministic tie-break, the two wire encodings of a mask (sorted 32-bit indices or a
// bitmap) and the Jaccard overlap of two masks.
// Invariant: a mask is a strictly increasing list of slice-local indices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gossamer::optim {

// The k indices of the largest scores (k <= scores.size()); ties go to the lower index, so
// the result is a pure function of the scores. Returned sorted ascending.
std::vector<uint32_t> top_k_indices(std::span<const float> scores, size_t k);

enum class MaskEncoding : uint8_t { INDICES, BITMAP };
// Bytes of one encoded mask of k indices over a slice of n elements.
size_t mask_bytes(MaskEncoding encoding, size_t k, size_t n);
// The smaller encoding for k of n (the bitmap when k / n > 1/32; ties: indices).
MaskEncoding smaller_encoding(size_t k, size_t n);

// Bitmap of n bits (ceil(n / 8) bytes, bit i = byte i/8, bit i%8) for a mask.
void encode_bitmap(std::span<const uint32_t> mask, size_t n, uint8_t* out);
// Appends the set bits of a bitmap of n bits, plus `base`, to out.
void decode_bitmap(const uint8_t* bits, size_t n, uint32_t base, std::vector<uint32_t>& out);

// |a ∩ b| / |a ∪ b| of two sorted masks (1 when both are empty).
double jaccard(std::span<const uint32_t> a, std::span<const uint32_t> b);

}  // namespace gossamer::optim
