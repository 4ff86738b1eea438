// Tests of the portable zip chunk codec (src/kernels/zip/portable_chunk.h), the code the CUDA
// kernels run, here on the CPU against the CPU codec (chunk_codec.h): the same bytes for every
// chunk of a corpus that reaches every mode, both stream layouts, escapes and every spread level;
// the same elements and fp32 sums back; the same verdict (accept or reject) on thousands of
// randomly damaged chunks and on damage at every structural byte; the codebook choice's
// thresholds against the logarithm they replace. Then DeviceZipCodec, the driver of those
// kernels, on host memory and on the guarded "device" memory (host code that touches it
// faults): the CPU codec's messages byte for byte, its elements and sums, its errors naming the
// chunk, kernels that miss a chunk reported, no allocation after the first call.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "comm/zip/chunk_codec.h"
#include "comm/zip/codec.h"
#include "comm/zip/device_codec.h"
#include "comm/zip/exponent_model.h"
#include "comm/zip/zip_tables.h"
#include "guarded_device_ops.h"
#include "kernels/cpu/memory.h"
#include "kernels/cpu/zip_chunks.h"
#include "kernels/zip/portable_chunk.h"
#include "zip_test_data.h"

namespace gossamer::comm::zip {
namespace {

// What the corpus reached (so that no check passes over an empty case).
struct Coverage {
  std::map<ChunkMode, size_t> modes;
  std::set<int> spreads;
  size_t four_streams = 0, escaped = 0, chunks = 0;
};

// One chunk's raw bytes (bf16 or fp32 bit patterns).
struct Chunk {
  DType dtype;
  std::vector<uint8_t> bytes;
  size_t n() const { return bytes.size() / dtype_size(dtype); }
};

template <class U>
void add_chunks(std::vector<Chunk>& out, const std::vector<U>& v, size_t chunk_elems) {
  const DType dtype = sizeof(U) == 2 ? DType::BF16 : DType::F32;
  for (size_t first = 0; first < v.size() || (first == 0 && v.empty()); first += chunk_elems) {
    const size_t n = std::min(chunk_elems, v.size() - first);
    Chunk c{dtype, std::vector<uint8_t>(n * sizeof(U))};
    if (n) std::memcpy(c.bytes.data(), v.data() + first, n * sizeof(U));
    out.push_back(std::move(c));
    if (v.empty()) break;
  }
}

// Values whose log2 magnitude is N(mu, s^2) (wide spreads: the log-normal codebooks).
std::vector<uint32_t> log_normal_f32(size_t n, double mu, double s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(mu, s);
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    const float x = float(std::exp2(dist(rng))) * (i % 2 ? -1.0f : 1.0f);
    v[i] = std::bit_cast<uint32_t>(x);
  }
  return v;
}

std::vector<Chunk> corpus() {
  std::vector<Chunk> out;
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  add_chunks(out, all, 16384);  // every pattern: escapes, NaNs, subnormals, four streams
  add_chunks(out, all, 333);
  for (float sigma : {1e-30f, 1e-8f, 0.02f, 1.0f, 1e20f}) {
    add_chunks(out, gaussian_bf16(20000, sigma, 7), 16384);
    add_chunks(out, gaussian_f32(20000, sigma, 8), 16384);
    add_chunks(out, gaussian_bf16(700, sigma, 9), 256);
  }
  for (double s : {1.0, 2.0, 3.0, 5.0, 8.0, 16.0, 40.0})
    add_chunks(out, log_normal_f32(6000, -10.0, s, 10), 6000);
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(255), size_t(257), size_t(4097)}) {
    std::vector<uint16_t> b(n, 0);
    add_chunks(out, b, 4096);  // +0
    for (auto& x : b) x = 0x8000;
    add_chunks(out, b, 4096);  // -0
    for (size_t i = 0; i < n; ++i) b[i] = uint16_t(0x7f80 | (i & 0x7f) | ((i & 1) << 15));
    add_chunks(out, b, 4096);  // exponent 255 throughout
    for (size_t i = 0; i < n; ++i) b[i] = uint16_t(i % 2 ? 0x0080 : 0x7f00);
    add_chunks(out, b, 4096);  // extremes alternate
    for (size_t i = 0; i < n; ++i) b[i] = uint16_t(i % 3 ? 0 : 0x0001);
    add_chunks(out, b, 4096);  // sparse subnormals
    std::vector<uint32_t> f(n, 0x3f800000u);
    add_chunks(out, f, 4096);  // constant
  }
  // Sparse around the threshold (a twelfth of the elements +0.0: 100 of 1,200), and sparse with
  // four streams.
  for (size_t zeros : {size_t(99), size_t(100), size_t(101)}) {
    std::vector<uint16_t> b = gaussian_bf16(1200, 0.1f, 11);
    for (size_t i = 0; i < zeros; ++i) b[i * 11] = 0;
    add_chunks(out, b, 1200);
  }
  std::vector<uint16_t> sparse = gaussian_bf16(16384, 0.05f, 12);
  for (size_t i = 0; i < sparse.size(); ++i) sparse[i] = i % 5 < 2 ? 0 : sparse[i];
  for (size_t i = 0; i < sparse.size(); i += 101) sparse[i] = 0x7f80;  // and escapes
  add_chunks(out, sparse, 16384);
  // One outlier per chunk at every exponent field, fp32.
  std::vector<uint32_t> f = gaussian_f32(256 * 512, 0.02f, 13);
  for (uint32_t e = 0; e < 256; ++e)
    f[e * 512 + e % 512] = (e << 23) | (e * 2654435761u & 0x7fffffu);
  add_chunks(out, f, 512);
  return out;
}

// Whether two float arrays hold the same bits (memcmp, which must not see the null data() of an
// empty vector).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

size_t encode_portable(const Chunk& c, uint8_t* out, bool checksum, ChunkHeader* info) {
  const ZipTablesView t = zip_tables().view();
  if (c.dtype == DType::BF16)
    return zip_encode_chunk<ZipBf16>(reinterpret_cast<const uint16_t*>(c.bytes.data()), c.n(), out,
                                     checksum, t, info);
  return zip_encode_chunk<ZipF32>(reinterpret_cast<const uint32_t*>(c.bytes.data()), c.n(), out,
                                  checksum, t, info);
}

// Decodes with the portable decoder into raw bytes; returns its status.
ZipStatus decode_portable(const uint8_t* in, size_t bytes, const Chunk& c, bool checksum,
                          std::vector<uint8_t>& out) {
  const ZipTablesView t = zip_tables().view();
  out.assign(c.bytes.size(), 0xa5);
  if (c.dtype == DType::BF16)
    return zip_decode_chunk<ZipBf16>(
        in, bytes, c.n(), checksum, t,
        ZipStoreSink<ZipBf16>{reinterpret_cast<uint16_t*>(out.data())});
  return zip_decode_chunk<ZipF32>(in, bytes, c.n(), checksum, t,
                                  ZipStoreSink<ZipF32>{reinterpret_cast<uint32_t*>(out.data())});
}

TEST(ZipPortable, EncodesTheCpuCodecsBytes) {
  Coverage seen;
  ChunkScratch scratch;
  for (const Chunk& c : corpus()) {
    for (bool checksum : {true, false}) {
      std::vector<uint8_t> cpu(max_chunk_bytes(c.n(), c.dtype)), port(cpu.size(), 0xee);
      ChunkInfo info;
      cpu.resize(
          encode_chunk(c.bytes.data(), c.n(), c.dtype, cpu.data(), checksum, scratch, &info));
      ChunkHeader h{};
      port.resize(encode_portable(c, port.data(), checksum, &h));
      ASSERT_EQ(port, cpu) << dtype_name(c.dtype) << " chunk of " << c.n() << ", mode "
                           << chunk_mode_name(info.mode);
      EXPECT_EQ(h.mode, info.mode);
      EXPECT_EQ(h.book, info.book);
      EXPECT_EQ(h.escapes, info.escapes);
      EXPECT_EQ(h.bits, info.exponent_bits);
      if (!checksum) continue;
      ++seen.chunks;
      ++seen.modes[info.mode];
      if (info.mode == ChunkMode::DENSE || info.mode == ChunkMode::SPARSE) {
        seen.spreads.insert(info.book / (kLocationLevels * kZeroLevels));
        seen.escaped += info.escapes > 0;
        seen.four_streams += c.n() >= kStreamsMinElems && info.mode == ChunkMode::DENSE;
      }
    }
  }
  EXPECT_GT(seen.modes[ChunkMode::RAW], 0u);
  EXPECT_GT(seen.modes[ChunkMode::ZERO], 0u);
  EXPECT_GT(seen.modes[ChunkMode::DENSE], 0u);
  EXPECT_GT(seen.modes[ChunkMode::SPARSE], 0u);
  EXPECT_GT(seen.four_streams, 0u);
  EXPECT_GT(seen.escaped, 0u);
  EXPECT_EQ(seen.spreads.size(), size_t(kSpreadLevels)) << "spread levels reached";
}

TEST(ZipPortable, DecodesTheCpuCodecsChunks) {
  ChunkScratch scratch;
  const ZipTablesView t = zip_tables().view();
  size_t chunks = 0;
  for (const Chunk& c : corpus()) {
    std::vector<uint8_t> enc(max_chunk_bytes(c.n(), c.dtype)), back;
    enc.resize(encode_chunk(c.bytes.data(), c.n(), c.dtype, enc.data(), true, scratch));
    ASSERT_EQ(decode_portable(enc.data(), enc.size(), c, true, back), ZipStatus::OK);
    ASSERT_EQ(back, c.bytes) << dtype_name(c.dtype) << " chunk of " << c.n();
    // The fp32 sums: the CPU codec's decompress_accumulate adds each element once.
    std::vector<float> acc(c.n()), want(c.n());
    for (size_t i = 0; i < c.n(); ++i) acc[i] = want[i] = i % 3 ? -0.0f : float(i) * 0.25f;
    for (size_t i = 0; i < c.n(); ++i)
      want[i] += c.dtype == DType::BF16
                     ? bf16_to_float(reinterpret_cast<const uint16_t*>(c.bytes.data())[i])
                     : std::bit_cast<float>(reinterpret_cast<const uint32_t*>(c.bytes.data())[i]);
    const ZipStatus s =
        c.dtype == DType::BF16
            ? zip_decode_chunk<ZipBf16>(enc.data(), enc.size(), c.n(), true, t,
                                        ZipAccumulateSink<ZipBf16>{acc.data(), false})
            : zip_decode_chunk<ZipF32>(enc.data(), enc.size(), c.n(), true, t,
                                       ZipAccumulateSink<ZipF32>{acc.data(), false});
    ASSERT_EQ(s, ZipStatus::OK);
    ASSERT_TRUE(same_bits(acc, want));
    ++chunks;
  }
  EXPECT_GT(chunks, 100u);
}

// The chunks the damage tests start from: bf16 chunks of 500 in every mode with escapes; a dense
// bf16 chunk with four streams (and their table) and escapes, and a short one after it; a sparse
// bf16 chunk with four streams; an fp32 dense chunk, and an fp32 sparse one with escapes.
std::vector<Chunk> damage_corpus() {
  std::vector<Chunk> chunks;
  std::vector<uint16_t> v = gaussian_bf16(5000, 0.05f, 17);
  for (size_t i = 1000; i < 2500; ++i) v[i] = i % 37 ? 0 : v[i];          // sparse
  for (size_t i = 3000; i < 3500; ++i) v[i] = 0;                          // zero
  for (size_t i = 4000; i < 4200; ++i) v[i] = uint16_t(i * 2654435761u);  // raw
  for (size_t i = 0; i < v.size(); i += 53) v[i] = 0x7f80;                // escapes
  add_chunks(chunks, v, 500);
  std::vector<uint16_t> w = gaussian_bf16(8192 + 3001, 0.05f, 23);
  for (size_t i = 0; i < w.size(); i += 101) w[i] = 0x7f80;
  add_chunks(chunks, w, 8192);
  std::vector<uint16_t> sp = gaussian_bf16(16384, 0.05f, 19);
  for (size_t i = 0; i < sp.size(); ++i) sp[i] = i % 5 < 2 ? 0 : sp[i];
  add_chunks(chunks, sp, 16384);
  add_chunks(chunks, gaussian_f32(3000, 1.0f, 29), 3000);
  std::vector<uint32_t> fs = gaussian_f32(3000, 1e-3f, 31);
  for (size_t i = 0; i < fs.size(); ++i) fs[i] = i % 3 ? 0 : (i % 41 ? fs[i] : 0x7fc00001u);
  add_chunks(chunks, fs, 3000);
  return chunks;
}

// Where a chunk's structure lies: the header, a sparse chunk's bitmaps, the start of the bits
// region (its stream table) and the end.
std::vector<size_t> structural_offsets(const std::vector<uint8_t>& enc, const Chunk& c) {
  const ChunkHeader h = read_chunk_header(enc.data());
  std::vector<size_t> at;
  for (size_t i = 0; i < 40 && i < enc.size(); ++i) at.push_back(i);
  for (size_t i = enc.size() > 16 ? enc.size() - 16 : 0; i < enc.size(); ++i) at.push_back(i);
  if (h.mode != ChunkMode::DENSE && h.mode != ChunkMode::SPARSE) return at;
  const size_t n = c.n(), l0 = bitmap_bytes(n), l1 = bitmap_bytes(l0);
  const size_t raw_bytes = c.dtype == DType::BF16 ? 1 : 3;
  size_t m = n, head = 0;
  if (h.mode == ChunkMode::SPARSE) {
    size_t stored = 0;
    for (size_t b = 0; b < l1; ++b) stored += size_t(std::popcount(unsigned(enc[16 + b])));
    m = 0;
    for (size_t k = 0; k < stored; ++k) m += size_t(std::popcount(unsigned(enc[16 + l1 + k])));
    head = l1 + stored;
    for (size_t i = 16; i < 16 + l1 + 8; ++i) at.push_back(i);           // byte bitmap
    for (size_t i = 16 + head - 8; i < 16 + head; ++i) at.push_back(i);  // its last bytes
  }
  const size_t region = 16 + head + m * raw_bytes + h.escapes;
  for (size_t i = region - 4; i < region + 16 && i < enc.size(); ++i) at.push_back(i);
  return at;
}

// Counts what the damage tests saw.
struct Verdicts {
  size_t rejected = 0, accepted_changed = 0, trials = 0;
};

// Decodes damaged chunk d with both decoders: the same verdict, and where both accept the same
// elements (with checksums on, only an unchanged chunk may pass).
void expect_same_verdict(const std::vector<uint8_t>& d, const std::vector<uint8_t>& enc,
                         const Chunk& c, bool checksum, Verdicts& v, const std::string& what) {
  thread_local ChunkScratch scratch;
  std::vector<uint8_t> cpu(c.bytes.size()), port;
  bool cpu_ok = true;
  try {
    decode_chunk(d.data(), d.size(), c.n(), c.dtype, cpu.data(), checksum, scratch);
  } catch (const CorruptInput&) {
    cpu_ok = false;
  }
  const ZipStatus s = decode_portable(d.data(), d.size(), c, checksum, port);
  ++v.trials;
  ASSERT_EQ(s == ZipStatus::OK, cpu_ok)
      << what << ": portable says " << zip_status_message(s) << ", checksum " << checksum << ", "
      << d.size() << " of " << enc.size() << " bytes";
  if (cpu_ok) {
    ASSERT_EQ(port, cpu) << what;
    v.accepted_changed += d != enc;
    EXPECT_TRUE(!checksum || d == enc) << what;
  } else {
    ++v.rejected;
  }
}

std::vector<uint8_t> encoded(const Chunk& c, bool checksum) {
  thread_local ChunkScratch scratch;
  std::vector<uint8_t> enc(max_chunk_bytes(c.n(), c.dtype));
  enc.resize(encode_chunk(c.bytes.data(), c.n(), c.dtype, enc.data(), checksum, scratch));
  return enc;
}

// Damaged chunks: the portable decoder rejects exactly those the CPU codec rejects, and where
// both accept they give the same elements. Random damage (flipped bits, overwritten runs,
// truncation, extension) with and without checksums; without them only the structure is
// checked, so both verdicts occur.
TEST(ZipPortable, RejectsWhatTheCpuCodecRejects) {
  std::mt19937 rng(2026);
  Verdicts v;
  for (bool checksum : {false, true})
    for (const Chunk& c : damage_corpus()) {
      const std::vector<uint8_t> enc = encoded(c, checksum);
      for (int t = 0; t < 400; ++t)
        ASSERT_NO_FATAL_FAILURE(expect_same_verdict(damage(enc, rng), enc, c, checksum, v,
                                                    "trial " + std::to_string(t)));
    }
  EXPECT_GT(v.rejected, v.trials / 2);
  EXPECT_GT(v.accepted_changed, 0u) << "no damage got past the structure checks alone";
}

// The same on targeted damage, checksums off: every byte of the header, a sparse chunk's bitmaps,
// the stream table and the last bytes, each plus and minus one and with its top bit flipped; and
// every truncation and extension by 1 to 8 bytes.
TEST(ZipPortable, RejectsWhatTheCpuCodecRejectsAtEveryStructuralByte) {
  Verdicts v;
  for (const Chunk& c : damage_corpus()) {
    const std::vector<uint8_t> enc = encoded(c, false);
    for (size_t at : structural_offsets(enc, c))
      for (int delta : {1, -1, 0x80}) {
        std::vector<uint8_t> d = enc;
        d[at] = uint8_t(delta == 0x80 ? d[at] ^ 0x80 : d[at] + delta);
        ASSERT_NO_FATAL_FAILURE(expect_same_verdict(
            d, enc, c, false, v, "byte " + std::to_string(at) + " " + std::to_string(delta)));
      }
    for (size_t k = 1; k <= 8; ++k) {
      std::vector<uint8_t> shorter(enc.begin(), enc.end() - ptrdiff_t(k)), longer = enc;
      longer.resize(enc.size() + k, uint8_t(k));
      ASSERT_NO_FATAL_FAILURE(expect_same_verdict(shorter, enc, c, false, v, "truncated"));
      ASSERT_NO_FATAL_FAILURE(expect_same_verdict(longer, enc, c, false, v, "extended"));
    }
  }
  EXPECT_GT(v.trials, 4000u);
  EXPECT_GT(v.rejected, v.trials / 2);
  EXPECT_GT(v.accepted_changed, 0u);
}

// The spread level by thresholds (codebook_choice_params) against the old rule, the rounded
// base-1.3 logarithm of s / g, on a sweep of standard deviations away from the boundaries.
TEST(ZipPortable, SpreadThresholdsEqualTheRoundedLogarithm) {
  const CodebookChoiceParams& p = codebook_choice_params();
  const double g = p.spread_above / 1.15;
  size_t levels_seen = 0;
  int last = -1;
  for (double s = 0.01; s < 40.0; s *= 1.001) {
    ExponentStats st;  // exponents 100 +- k with the variance s^2, as sums
    st.count = st.normal = 1000000;
    st.sum = 100 * st.count;
    st.sum_sq = uint64_t(std::llround((s * s + 100.0 * 100.0) * double(st.count)));
    const double m = 100.0, var = double(st.sum_sq) / double(st.count) - m * m;
    const double s_exact = std::sqrt(var);
    bool near = false;
    for (int l = 2; l < kSpreadLevels; ++l)
      near = near || std::abs(s_exact - p.spread_at_least[l]) < 1e-9 * s_exact;
    near = near || std::abs(s_exact - p.spread_above) < 1e-9 * s_exact;
    if (near) continue;
    int old = 0;
    if (s_exact > g * 1.15)
      old =
          std::clamp(int(std::lround(std::log(s_exact / g) / std::log(1.3))), 1, kSpreadLevels - 1);
    const int spread = choose_codebook(st).book / (kLocationLevels * kZeroLevels);
    ASSERT_EQ(spread, old) << "s = " << s_exact;
    levels_seen += spread != last;
    last = spread;
  }
  EXPECT_EQ(levels_seen, size_t(kSpreadLevels));
}

// ---- the driver ------------------------------------------------------------------------------

// The CPU kernels behind the guarded memory: every pointer must be in it, and the regions are
// open only while a kernel runs.
namespace guarded = gossamer::testing::guarded_detail;
void require_tables(const ZipTablesView& t) {
  guarded::require_device(t.length, "zip tables");
  guarded::require_device(t.code, "zip tables");
  guarded::require_device(t.single, "zip tables");
  guarded::require_device(t.crc, "zip tables");
}
const kernels::ZipChunkKernels kGuardedZip{
    .backend = "guarded-device",
    .memory = &gossamer::testing::kGuardedDeviceMemory,
    .encode =
        [](const void* in, size_t n, bool bf16, size_t chunk, bool checksum, const ZipTablesView& t,
           uint8_t* slots, uint32_t* sizes) {
          guarded::require_device(in, "zip encode"), guarded::require_device(slots, "zip encode");
          guarded::require_device(sizes, "zip encode"), require_tables(t);
          guarded::Open open;
          kernels::cpu::kZipChunks.encode(in, n, bf16, chunk, checksum, t, slots, sizes);
        },
    .gather =
        [](const uint8_t* slots, size_t slot, const uint32_t* sizes, const uint64_t* offsets,
           size_t chunks, uint8_t* out) {
          guarded::require_device(slots, "zip gather"),
              guarded::require_device(sizes, "zip gather");
          guarded::require_device(offsets, "zip gather"),
              guarded::require_device(out, "zip gather");
          guarded::Open open;
          kernels::cpu::kZipChunks.gather(slots, slot, sizes, offsets, chunks, out);
        },
    .decode =
        [](const uint8_t* msg, const uint64_t* offsets, size_t n, bool bf16, size_t chunk,
           bool checksum, const ZipTablesView& t, kernels::ZipTarget target, void* out,
           uint32_t* status) {
          guarded::require_device(msg, "zip decode"),
              guarded::require_device(offsets, "zip decode");
          guarded::require_device(out, "zip decode"), guarded::require_device(status, "zip decode");
          require_tables(t);
          guarded::Open open;
          kernels::cpu::kZipChunks.decode(msg, offsets, n, bf16, chunk, checksum, t, target, out,
                                          status);
        },
};

std::vector<uint8_t> cpu_message(const void* in, size_t n, DType dtype,
                                 const CodecOptions& options) {
  std::vector<uint8_t> out(max_compressed_bytes(n, dtype, options.chunk_elems));
  out.resize(compress(in, n, dtype, out, options));
  return out;
}

// A buffer of the codec's memory holding these bytes.
template <class T>
Buffer<T> on(const kernels::ZipChunkKernels& k, const std::vector<T>& host, size_t extra = 0) {
  Buffer<T> b(host.size() + extra, *k.memory);
  b.upload(host.data(), host.size());
  return b;
}

template <class T>
std::vector<T> back(const Buffer<T>& b, size_t n) {
  std::vector<T> host(n);
  b.download(host.data(), n);
  return host;
}

class DeviceZipCodecTest : public ::testing::TestWithParam<const kernels::ZipChunkKernels*> {};

TEST_P(DeviceZipCodecTest, WritesAndReadsTheCpuCodecsMessages) {
  const kernels::ZipChunkKernels& k = *GetParam();
  DeviceZipCodec codec(k);
  std::vector<uint16_t> b = gaussian_bf16(70000, 0.03f, 31);
  for (size_t i = 20000; i < 40000; ++i) b[i] = i % 7 ? 0 : b[i];  // sparse chunks
  for (size_t i = 45000; i < 50000; ++i) b[i] = 0;
  for (size_t i = 0; i < b.size(); i += 997) b[i] = 0xff81;  // NaN: escapes
  const std::vector<uint32_t> f = gaussian_f32(33333, 2.0f, 37);
  struct Case {
    DType dtype;
    const void* data;
    size_t n;
    CodecOptions options;
  };
  const Case cases[] = {
      {DType::BF16, b.data(), b.size(), {}},
      {DType::BF16, b.data(), b.size(), {.chunk_elems = 4096, .checksum = false}},
      {DType::BF16, b.data(), 1, {.chunk_elems = 333}},
      {DType::BF16, b.data(), 0, {}},
      {DType::F32, f.data(), f.size(), {.chunk_elems = 1000}},
      {DType::F32, f.data(), f.size(), {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << dtype_name(c.dtype) << " n=" << c.n << " chunk " << c.options.chunk_elems);
    const size_t es = dtype_size(c.dtype);
    std::vector<uint8_t> raw(c.n * es);
    if (c.n) std::memcpy(raw.data(), c.data, raw.size());
    const std::vector<uint8_t> want = cpu_message(c.data, c.n, c.dtype, c.options);
    const size_t cap = max_compressed_bytes(c.n, c.dtype, c.options.chunk_elems);
    Buffer<uint8_t> in = on(k, raw), msg(cap, *k.memory);
    const size_t bytes = codec.compress(in.data(), c.n, c.dtype, msg.data(), cap, c.options);
    ASSERT_EQ(bytes, want.size());
    ASSERT_EQ(back(msg, bytes), want);
    // Decoding the CPU codec's message.
    Buffer<uint8_t> cpu_msg = on(k, want), out(raw.size() + 1, *k.memory);
    codec.decompress(cpu_msg.data(), want.size(), out.data(), c.n, c.dtype);
    EXPECT_EQ(back(out, raw.size()), raw);
    // And accumulating it: the CPU codec's sums, bit for bit, assigned and added.
    std::vector<float> acc0(c.n);
    for (size_t i = 0; i < c.n; ++i) acc0[i] = float(i % 11) - 5.0f;
    for (bool assign : {true, false}) {
      std::vector<float> want_acc = acc0;
      decompress_accumulate(want, want_acc.data(), c.n, c.dtype, assign);
      Buffer<float> acc = on(k, acc0, 1);
      codec.decompress_accumulate(cpu_msg.data(), want.size(), acc.data(), c.n, c.dtype, assign);
      const std::vector<float> got = back(acc, c.n);
      EXPECT_TRUE(same_bits(got, want_acc)) << "assign " << assign;
    }
  }
}

TEST_P(DeviceZipCodecTest, ReportsDamageNamingTheChunk) {
  const kernels::ZipChunkKernels& k = *GetParam();
  DeviceZipCodec codec(k);
  const std::vector<uint16_t> v = gaussian_bf16(5 * 1024, 0.05f, 41);
  std::vector<uint8_t> raw(v.size() * 2);
  std::memcpy(raw.data(), v.data(), raw.size());
  for (bool checksum : {true, false}) {
    const std::vector<uint8_t> msg =
        cpu_message(v.data(), v.size(), DType::BF16, {.chunk_elems = 1024, .checksum = checksum});
    Buffer<uint16_t> out(v.size(), *k.memory);
    // A byte of chunk 3's header (its mode) changed: the chunk is named.
    std::vector<uint8_t> d = msg;
    size_t at = kMessageHeaderBytes + 5 * 4;
    for (size_t c = 0; c < 3; ++c) {
      uint32_t s = 0;
      std::memcpy(&s, msg.data() + kMessageHeaderBytes + c * 4, 4);
      at += s;
    }
    d[at] = 9;
    Buffer<uint8_t> bad = on(k, d);
    try {
      codec.decompress(bad.data(), d.size(), out.data(), v.size(), DType::BF16);
      ADD_FAILURE() << "a damaged chunk was accepted";
    } catch (const CorruptInput& e) {
      EXPECT_NE(std::string(e.what()).find("chunk 3 of 5"), std::string::npos) << e.what();
    }
    // Damage in the head, and a message of another length or dtype, are refused on the host.
    Buffer<uint8_t> good = on(k, msg);
    EXPECT_THROW(codec.decompress(good.data(), msg.size() - 1, out.data(), v.size(), DType::BF16),
                 CorruptInput);
    EXPECT_THROW(codec.decompress(good.data(), msg.size(), out.data(), v.size() - 1, DType::BF16),
                 CorruptInput);
    EXPECT_THROW(codec.decompress(good.data(), msg.size(), out.data(), v.size() / 2, DType::F32),
                 CorruptInput);
    EXPECT_THROW(codec.decompress(good.data(), 7, out.data(), v.size(), DType::BF16), CorruptInput);
    // A seeded damage loop: the driver's verdict is the CPU codec's.
    std::mt19937 rng(99);
    std::vector<uint16_t> cpu_out(v.size());
    for (int t = 0; t < 300; ++t) {
      const std::vector<uint8_t> dd = damage(msg, rng);
      bool cpu_ok = true;
      try {
        decompress(dd, cpu_out.data(), v.size(), DType::BF16, 1);
      } catch (const CorruptInput&) {
        cpu_ok = false;
      }
      Buffer<uint8_t> m = on(k, dd);
      bool ok = true;
      try {
        codec.decompress(m.data(), dd.size(), out.data(), v.size(), DType::BF16);
      } catch (const CorruptInput&) {
        ok = false;
      }
      ASSERT_EQ(ok, cpu_ok) << "trial " << t;
      if (ok) {
        EXPECT_EQ(back(out, v.size()), cpu_out);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Memories, DeviceZipCodecTest,
                         ::testing::Values(&kernels::cpu::kZipChunks, &kGuardedZip),
                         [](const auto& info) {
                           return std::string(info.param == &kGuardedZip ? "GuardedDevice"
                                                                         : "Host");
                         });

// Kernels that miss the last chunk (a launch-size bug) are reported, never passed: a chunk left
// unencoded keeps size 0, a chunk left undecoded its "not decoded" status.
TEST(DeviceZipCodec, ReportsAChunkTheKernelsMissed) {
  const std::vector<uint16_t> v = gaussian_bf16(3 * 1024 + 5, 0.05f, 47);
  const CodecOptions options{.chunk_elems = 1024};
  const std::vector<uint8_t> msg = cpu_message(v.data(), v.size(), DType::BF16, options);
  auto expect_error = [](const std::function<void()>& call, const char* text) {
    try {
      call();
      ADD_FAILURE() << "no error; expected one saying '" << text << "'";
    } catch (const CorruptInput& e) {
      ADD_FAILURE() << "reported as corrupt input: " << e.what();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  kernels::ZipChunkKernels k = kernels::cpu::kZipChunks;
  k.encode = [](const void* in, size_t n, bool bf16, size_t chunk, bool checksum,
                const ZipTablesView& t, uint8_t* slots, uint32_t* sizes) {
    kernels::cpu::kZipChunks.encode(in, chunk * ((n - 1) / chunk), bf16, chunk, checksum, t, slots,
                                    sizes);
  };
  k.decode = [](const uint8_t* m, const uint64_t* offsets, size_t n, bool bf16, size_t chunk,
                bool checksum, const ZipTablesView& t, kernels::ZipTarget target, void* out,
                uint32_t* status) {
    kernels::cpu::kZipChunks.decode(m, offsets, chunk * ((n - 1) / chunk), bf16, chunk, checksum, t,
                                    target, out, status);
  };
  DeviceZipCodec codec(k);
  std::vector<uint8_t> out(max_compressed_bytes(v.size(), DType::BF16, 1024));
  expect_error(
      [&] { codec.compress(v.data(), v.size(), DType::BF16, out.data(), out.size(), options); },
      "chunk 3 of 4: size 0 outside");
  std::vector<uint16_t> back(v.size());
  expect_error(
      [&] { codec.decompress(msg.data(), msg.size(), back.data(), v.size(), DType::BF16); },
      "chunk 3 of 4 not decoded");
}

// Buffers grow to the largest call and are reused: a second call of the same or a smaller size
// allocates nothing.
int g_allocs = 0;
const MemoryOps kCountingMemory{
    .backend = "counting",
    .host_accessible = true,
    .alloc = [](size_t bytes) { return ++g_allocs, host_alloc(bytes); },
    .free = host_free,
    .zero = kernels::cpu::kMemory.zero,
    .upload = kernels::cpu::kMemory.upload,
    .download = kernels::cpu::kMemory.download,
    .copy = kernels::cpu::kMemory.copy,
};

TEST(DeviceZipCodec, AllocatesOnlyWhenACallIsLarger) {
  kernels::ZipChunkKernels k = kernels::cpu::kZipChunks;
  k.memory = &kCountingMemory;
  DeviceZipCodec codec(k);
  const std::vector<uint16_t> v = gaussian_bf16(50000, 0.05f, 43);
  std::vector<uint8_t> raw(v.size() * 2);
  std::memcpy(raw.data(), v.data(), raw.size());
  Buffer<uint8_t> in = on(k, raw),
                  msg(max_compressed_bytes(v.size(), DType::BF16), kCountingMemory);
  Buffer<uint16_t> out(v.size(), kCountingMemory);
  auto round_trip = [&](size_t n) {
    const size_t bytes = codec.compress(in.data(), n, DType::BF16, msg.data(), msg.size());
    codec.decompress(msg.data(), bytes, out.data(), n, DType::BF16);
  };
  round_trip(v.size());
  const int after_first = g_allocs;
  round_trip(v.size());
  round_trip(20000);
  EXPECT_EQ(g_allocs, after_first);
  EXPECT_EQ(std::memcmp(out.data(), v.data(), 20000 * 2), 0);
}

}  // namespace
}  // namespace gossamer::comm::zip
