// Tests of the zip codec (src/comm/zip): bit-exact round trips for every bf16 pattern and a
// large fp32 sample (NaN payloads, infinities, subnormals, signed zeros), adversarial inputs
// (all escapes, all zeros, constants, sizes around the chunk size), the modes chosen, ratios on
// Gaussian and sparse data against the exponent-entropy bound, thread-count independence, the
// fp32 accumulation, the codebooks' prefix-code properties, and a seeded corruption and
// truncation loop (every damage reported with checksums; no out-of-bounds access without them:
// run it under the sanitizer build).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "comm/zip/codec.h"
#include "comm/zip/exponent_model.h"
#include "core/bf16.h"
#include "zip_test_data.h"

namespace gossamer::comm::zip {
namespace {

std::vector<uint8_t> compress_vec(const void* in, size_t n, DType dtype,
                                  const CodecOptions& options = {}, CodecStats* stats = nullptr) {
  std::vector<uint8_t> out(max_compressed_bytes(n, dtype, options.chunk_elems));
  out.resize(compress(in, n, dtype, out, options, stats));
  return out;
}

template <class U>
size_t count_mismatches(const std::vector<U>& a, const std::vector<U>& b) {
  size_t wrong = 0;
  for (size_t i = 0; i < a.size(); ++i) wrong += a[i] != b[i];
  return wrong;
}

template <class U>
void expect_round_trip(const std::vector<U>& data, DType dtype, const CodecOptions& options = {}) {
  const std::vector<uint8_t> packed = compress_vec(data.data(), data.size(), dtype, options);
  EXPECT_LE(packed.size(), max_compressed_bytes(data.size(), dtype, options.chunk_elems));
  std::vector<U> back(data.size(), U(0x5a5a));
  decompress(packed, back.data(), back.size(), dtype);
  EXPECT_EQ(count_mismatches(data, back), 0u)
      << data.size() << " elements, chunk " << options.chunk_elems;
}

// Entropy (bits) of the exponent fields.
template <class U>
double exponent_entropy(const std::vector<U>& v, int shift) {
  std::vector<double> hist(256, 0);
  for (U x : v) hist[(x >> shift) & 0xff] += 1;
  double h = 0;
  for (double c : hist)
    if (c > 0) h -= c / double(v.size()) * std::log2(c / double(v.size()));
  return h;
}

TEST(ZipCodec, EveryBf16PatternRoundTrips) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  expect_round_trip(all, DType::BF16);
  expect_round_trip(all, DType::BF16, {.chunk_elems = 100});
  std::shuffle(all.begin(), all.end(), std::mt19937(7));
  expect_round_trip(all, DType::BF16);
  expect_round_trip(all, DType::BF16, {.chunk_elems = 4097});
  // Each pattern amid Gaussian data (a coded chunk, so the pattern goes through the codebook or
  // the escape path rather than a raw chunk).
  std::vector<uint16_t> mixed = gaussian_bf16(65536 * 4, 0.02f, 3);
  for (size_t i = 0; i < 65536; ++i) mixed[i * 4 + 1] = uint16_t(i);
  expect_round_trip(mixed, DType::BF16);
}

TEST(ZipCodec, Fp32SampleRoundTrips) {
  std::mt19937 rng(11);
  std::vector<uint32_t> bits(1 << 20);
  for (auto& x : bits) x = rng();  // uniform bit patterns: every exponent, NaN payloads
  expect_round_trip(bits, DType::F32);
  std::vector<uint32_t> v = gaussian_f32(1 << 20, 1e-3f, 5);
  const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                               0xffc00001u, 0x7f800001u, 0x7fbfffffu, 0x00000001u, 0x807fffffu,
                               0x00400000u, 0x7f7fffffu, 0xff7fffffu, 0x00800000u};
  for (size_t i = 0; i < v.size(); i += 97) v[i] = specials[(i / 97) % std::size(specials)];
  for (size_t i = 13; i < v.size(); i += 101) v[i] = rng();
  expect_round_trip(v, DType::F32);
  expect_round_trip(v, DType::F32, {.chunk_elems = 333});
  for (float sigma : {1e-30f, 1e-8f, 1.0f, 1e20f})
    expect_round_trip(gaussian_f32(50000, sigma, 2), DType::F32);
}

TEST(ZipCodec, AdversarialInputsRoundTrip) {
  for (DType dtype : {DType::BF16, DType::F32}) {
    const size_t chunk = 256;
    for (size_t n : {size_t(0), size_t(1), chunk - 1, chunk, chunk + 1, 3 * chunk + 5}) {
      const CodecOptions options{.chunk_elems = chunk};
      SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " n=" << n);
      if (dtype == DType::BF16) {
        std::vector<uint16_t> v(n);
        expect_round_trip(v, dtype, options);  // all +0
        for (auto& x : v) x = 0x8000;          // all -0
        expect_round_trip(v, dtype, options);
        for (size_t i = 0; i < n; ++i) v[i] = uint16_t(0x7f80 | (i & 0x7f) | ((i & 1) << 15));
        expect_round_trip(v, dtype, options);  // every exponent 255 (escapes): inf and NaNs
        for (size_t i = 0; i < n; ++i) v[i] = uint16_t(i % 2 ? 0x0080 : 0x7f00);
        expect_round_trip(v, dtype, options);  // extremes alternate: escapes around any base
        for (auto& x : v) x = 0x3f80;          // constant 1.0
        expect_round_trip(v, dtype, options);
        for (size_t i = 0; i < n; ++i) v[i] = uint16_t(i % 3 ? 0 : 0x0001);
        expect_round_trip(v, dtype, options);  // sparse subnormals
      } else {
        std::vector<uint32_t> v(n);
        expect_round_trip(v, dtype, options);
        for (auto& x : v) x = 0x80000000u;
        expect_round_trip(v, dtype, options);
        for (size_t i = 0; i < n; ++i) v[i] = 0x7f800000u | uint32_t(i) | (uint32_t(i & 1) << 31);
        expect_round_trip(v, dtype, options);
        for (auto& x : v) x = 0x3f800000u;
        expect_round_trip(v, dtype, options);
      }
    }
  }
}

// Chunk e holds Gaussian values and one element of exponent field e (every e, both dtypes): the
// outlier falls inside or outside the chunk's window (the escape-free coding loop must not be
// chosen when it escapes), at every distance from the base.
TEST(ZipCodec, OneOutlierPerChunkAtEveryExponent) {
  const size_t chunk = 4096;
  std::vector<uint16_t> b = gaussian_bf16(256 * chunk, 0.02f, 41);
  std::vector<uint32_t> f = gaussian_f32(256 * chunk, 0.02f, 43);
  for (uint32_t e = 0; e < 256; ++e) {
    const size_t at = e * chunk + (e * 37) % chunk;
    b[at] = uint16_t((e << 7) | (e & 0x7f) | ((e & 1) << 15));
    f[at] = (e << 23) | (e * 2654435761u & 0x7fffffu) | ((e & 2) << 30);
  }
  expect_round_trip(b, DType::BF16, {.chunk_elems = chunk});
  expect_round_trip(f, DType::F32, {.chunk_elems = chunk});
}

TEST(ZipCodec, ChoosesModesAndStaysWithinBounds) {
  const size_t n = 16384 * 4;
  CodecStats stats;
  std::vector<uint16_t> zeros(n, 0);
  std::vector<uint8_t> packed = compress_vec(zeros.data(), n, DType::BF16, {}, &stats);
  EXPECT_EQ(stats.chunks_by_mode[size_t(ChunkMode::ZERO) - 1], 4u);
  EXPECT_EQ(packed.size(), kMessageHeaderBytes + 4 * (4 + kChunkHeaderBytes));

  std::vector<uint16_t> sparse = gaussian_bf16(n, 0.01f, 9);
  std::mt19937 rng(4);
  for (auto& x : sparse)
    if (rng() % 100 != 0) x = 0;  // 99% exact zeros
  packed = compress_vec(sparse.data(), n, DType::BF16, {}, &stats);
  EXPECT_EQ(stats.chunks_by_mode[size_t(ChunkMode::SPARSE) - 1], 4u);
  EXPECT_GT(double(n * 2) / double(packed.size()), 30.0) << packed.size();  // a flat bitmap: 16x
  expect_round_trip(sparse, DType::BF16);

  std::vector<uint16_t> noise(n);
  for (auto& x : noise) x = uint16_t(rng());
  packed = compress_vec(noise.data(), n, DType::BF16, {}, &stats);
  EXPECT_EQ(stats.chunks_by_mode[size_t(ChunkMode::RAW) - 1], 4u);  // would not shrink
  EXPECT_EQ(packed.size(), max_compressed_bytes(n, DType::BF16));

  const std::vector<uint16_t> g = gaussian_bf16(n, 1.0f, 1);
  packed = compress_vec(g.data(), n, DType::BF16, {}, &stats);
  EXPECT_EQ(stats.chunks_by_mode[size_t(ChunkMode::DENSE) - 1], 4u);
}

TEST(ZipCodec, GaussianRatioNearTheEntropyBound) {
  const size_t n = 1 << 21;
  for (float sigma : {1e-4f, 0.02f, 1.0f, 300.0f}) {
    SCOPED_TRACE(sigma);
    const std::vector<uint16_t> v = gaussian_bf16(n, sigma, 21);
    const double ratio = double(2 * n) / double(compress_vec(v.data(), n, DType::BF16).size());
    const double bound = 16.0 / (8.0 + exponent_entropy(v, 7));
    EXPECT_GE(ratio, 1.45);  // the top-7 code reaches 1.41x
    EXPECT_GE(ratio, 0.97 * bound) << "bound " << bound;
    EXPECT_LE(ratio, bound * 1.001);
    const std::vector<uint32_t> f = gaussian_f32(n / 2, sigma, 22);
    const double ratio32 =
        double(4 * f.size()) / double(compress_vec(f.data(), f.size(), DType::F32).size());
    EXPECT_GE(ratio32, 0.98 * 32.0 / (24.0 + exponent_entropy(f, 23)));
  }
}

TEST(ZipCodec, OutputIndependentOfThreadCount) {
  std::vector<uint16_t> v = gaussian_bf16(16384 * 7 + 3, 0.1f, 8);
  for (size_t i = 0; i < 20000; ++i) v[i] = 0;  // a zero chunk and a sparse one
  const std::vector<uint8_t> one = compress_vec(v.data(), v.size(), DType::BF16, {.threads = 1});
  const std::vector<uint8_t> two = compress_vec(v.data(), v.size(), DType::BF16, {.threads = 2});
  const std::vector<uint8_t> five = compress_vec(v.data(), v.size(), DType::BF16, {.threads = 5});
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, five);
  std::vector<uint16_t> back(v.size());
  decompress(one, back.data(), back.size(), DType::BF16, 3);
  EXPECT_EQ(count_mismatches(v, back), 0u);
}

TEST(ZipCodec, AccumulatesInFp32) {
  const size_t n = 40000;
  const std::vector<uint16_t> a = gaussian_bf16(n, 1.0f, 31), b = gaussian_bf16(n, 1.0f, 32);
  std::vector<float> acc(n, 123.0f);
  decompress_accumulate(compress_vec(a.data(), n, DType::BF16), acc.data(), n, DType::BF16, true);
  decompress_accumulate(compress_vec(b.data(), n, DType::BF16), acc.data(), n, DType::BF16, false);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i)
    wrong += std::bit_cast<uint32_t>(acc[i]) !=
             std::bit_cast<uint32_t>(bf16_to_float(a[i]) + bf16_to_float(b[i]));
  EXPECT_EQ(wrong, 0u);
  const std::vector<uint32_t> f = gaussian_f32(n, 1.0f, 33);
  std::vector<float> acc32(n, 0.0f);
  decompress_accumulate(compress_vec(f.data(), n, DType::F32), acc32.data(), n, DType::F32, true);
  wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += std::bit_cast<uint32_t>(acc32[i]) != f[i];
  EXPECT_EQ(wrong, 0u);
}

TEST(ZipCodec, CodebooksAreCompleteLengthLimitedPrefixCodes) {
  for (int id = 0; id < kNumCodebooks; ++id) {
    const Codebook& book = codebook(id);
    double kraft = 0;
    for (int s = 0; s < kNumSymbols; ++s) {
      ASSERT_GE(book.length[size_t(s)], 1);
      ASSERT_LE(book.length[size_t(s)], kMaxCodeBits);
      kraft += std::ldexp(1.0, -book.length[size_t(s)]);
    }
    EXPECT_EQ(kraft, 1.0) << "codebook " << id;
    for (int x = 0; x < kLutSize; ++x) ASSERT_GT(book.multi[size_t(x)].bits, 0) << id << " " << x;
  }
  EXPECT_EQ(codebooks_fingerprint(), codebooks_fingerprint());
}

TEST(ZipCodec, RefusesAMessageOfAnotherShape) {
  const std::vector<uint16_t> v = gaussian_bf16(1000, 1.0f, 2);
  const std::vector<uint8_t> packed = compress_vec(v.data(), v.size(), DType::BF16);
  std::vector<uint32_t> out32(1000);
  EXPECT_THROW(decompress(packed, out32.data(), 1000, DType::F32), CorruptInput);
  std::vector<uint16_t> out(1001);
  EXPECT_THROW(decompress(packed, out.data(), 999, DType::BF16), CorruptInput);
  std::vector<int32_t> ints(10);
  std::vector<uint8_t> buf(max_compressed_bytes(10, DType::F32));
  EXPECT_THROW(compress(ints.data(), 10, DType::I32, buf), Error);
  EXPECT_THROW(compress(v.data(), 1000, DType::BF16, std::span<uint8_t>(buf.data(), 10)), Error);
}

// Damages a message of v (chunks of chunk_elems) `trials` times: with checksums every real
// damage is reported; without, the structure checks alone catch many (no crash is the test).
void expect_damage_reported(const std::vector<uint16_t>& v, size_t chunk_elems, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> out(v.size());
  for (bool checksum : {true, false}) {
    const std::vector<uint8_t> msg = compress_vec(
        v.data(), v.size(), DType::BF16, {.chunk_elems = chunk_elems, .checksum = checksum});
    int reported = 0, accepted_unchanged = 0;
    const int trials = 3000;
    for (int t = 0; t < trials; ++t) {
      const std::vector<uint8_t> d = damage(msg, rng);
      try {
        decompress(d, out.data(), out.size(), DType::BF16, 1);
        accepted_unchanged += d == msg;
      } catch (const CorruptInput&) {
        ++reported;
      }
    }
    if (checksum)
      EXPECT_EQ(reported + accepted_unchanged, trials);
    else
      EXPECT_GT(reported, trials / 4);
  }
}

TEST(ZipCodec, CorruptionAndTruncationAreReported) {
  // Chunks of 500: every mode, one exponent stream each.
  std::vector<uint16_t> v = gaussian_bf16(5000, 0.05f, 17);
  for (size_t i = 1000; i < 2500; ++i) v[i] = i % 37 ? 0 : v[i];          // sparse chunks
  for (size_t i = 3000; i < 3500; ++i) v[i] = 0;                          // zero chunks
  for (size_t i = 4000; i < 4200; ++i) v[i] = uint16_t(i * 2654435761u);  // raw
  expect_damage_reported(v, 500, 2026);
  // Chunks of 8192: dense ones with four exponent streams and their bit-count table, a sparse
  // one with four (4913 coded elements), a short last chunk with one.
  std::vector<uint16_t> w = gaussian_bf16(8192 * 2 + 3000, 0.05f, 23);
  for (size_t i = 8192; i < 16384; ++i) w[i] = i % 5 < 2 ? 0 : w[i];
  for (size_t i = 0; i < w.size(); i += 101) w[i] = 0x7f80;  // escapes in every stream
  expect_damage_reported(w, 8192, 2027);
}

}  // namespace
}  // namespace gossamer::comm::zip
