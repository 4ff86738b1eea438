// The zip codec's chunk format (chunk_codec.h) as portable code: C++17 functions that compile for
// the host and, under nvcc, for the device (GOSSAMER_HOST_DEVICE), with no allocation, no
// exception and no library call but sqrt, floor and fma. One call encodes or decodes one chunk,
// sequentially, writing straight into its output (a sizing pass first, so no scratch): the CUDA
// kernels run one chunk per thread (kernels/cuda/zip_chunks.cu), the CPU reference runs the same
// calls over OpenMP (kernels/cpu/zip_chunks.cpp). The CPU codec (chunk_codec.cpp) keeps its own
// vectorised loops and shares this file's element layouts, header, stream layout and codebook
// choice.
// Invariants: zip_encode_chunk writes the bytes encode_chunk writes (tests/unit/
// test_zip_portable.cpp); zip_decode_chunk reads only in[0, bytes), returns a status other than
// OK exactly where decode_chunk throws CorruptInput, and otherwise hands each of the n elements
// to its sink once, in element order (on an error, the elements before it have been handed on).
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>

#include "core/bf16.h"  // GOSSAMER_HOST_DEVICE
#include "kernels/zip/exponent_format.h"

namespace gossamer::comm::zip {

#define ZIP_HD GOSSAMER_HOST_DEVICE

inline constexpr size_t kChunkHeaderBytes = 16;
enum class ChunkMode : uint8_t { RAW = 1, ZERO = 2, DENSE = 3, SPARSE = 4 };
inline constexpr int kNumChunkModes = 4;

// ---- little-endian fields --------------------------------------------------------------------
ZIP_HD inline uint32_t zip_load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
ZIP_HD inline void zip_store_u32(uint8_t* p, uint32_t v) {
  for (int b = 0; b < 4; ++b) p[b] = uint8_t(v >> (8 * b));
}

// ---- elements: sign + mantissa bytes ("raw") and an 8-bit exponent field --------------------
struct ZipBf16 {
  using U = uint16_t;
  static constexpr size_t kRawBytes = 1;
  ZIP_HD static uint32_t exponent(U v) { return (v >> 7) & 0xffu; }
  ZIP_HD static void put_raw(uint8_t* p, U v) { *p = uint8_t(((v >> 8) & 0x80u) | (v & 0x7fu)); }
  ZIP_HD static U compose(const uint8_t* p, uint32_t e) {
    const uint32_t s = *p;
    return U(((s & 0x80u) << 8) | (e << 7) | (s & 0x7fu));
  }
  ZIP_HD static U load(const uint8_t* p) { return U(p[0] | p[1] << 8); }
  ZIP_HD static uint32_t fp32_bits(U v) { return uint32_t(v) << 16; }
};

struct ZipF32 {
  using U = uint32_t;
  static constexpr size_t kRawBytes = 3;
  ZIP_HD static uint32_t exponent(U v) { return (v >> 23) & 0xffu; }
  ZIP_HD static uint32_t raw(U v) { return (v & 0x7fffffu) | ((v >> 31) << 23); }
  ZIP_HD static void put_raw(uint8_t* p, U v) {
    const uint32_t s = raw(v);
    p[0] = uint8_t(s);
    p[1] = uint8_t(s >> 8);
    p[2] = uint8_t(s >> 16);
  }
  ZIP_HD static U compose(const uint8_t* p, uint32_t e) {
    const uint32_t s = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16;
    return ((s >> 23) << 31) | (e << 23) | (s & 0x7fffffu);
  }
  ZIP_HD static U load(const uint8_t* p) { return zip_load_u32(p); }
  ZIP_HD static uint32_t fp32_bits(U v) { return v; }
};

// ---- the chunk header ------------------------------------------------------------------------
struct ChunkHeader {
  ChunkMode mode;
  uint8_t base;
  uint16_t book;
  uint32_t escapes;
  uint32_t bits;
  uint32_t crc;
};

ZIP_HD inline void write_chunk_header(uint8_t* out, const ChunkHeader& h) {
  out[0] = uint8_t(h.mode);
  out[1] = h.base;
  out[2] = uint8_t(h.book);
  out[3] = uint8_t(h.book >> 8);
  zip_store_u32(out + 4, h.escapes);
  zip_store_u32(out + 8, h.bits);
  zip_store_u32(out + 12, h.crc);
}

ZIP_HD inline ChunkHeader read_chunk_header(const uint8_t* in) {
  return ChunkHeader{ChunkMode(in[0]),
                     in[1],
                     uint16_t(in[2] | in[3] << 8),
                     zip_load_u32(in + 4),
                     zip_load_u32(in + 8),
                     zip_load_u32(in + 12)};
}

// ---- the exponent streams' layout ------------------------------------------------------------
// The exponent bits of m coded elements are stream_count(m) streams, stream k coding the
// elements [stream_begin(m, k), stream_begin(m, k + 1)), each starting on a byte: kStreams for
// at least kStreamsMinElems elements, else 1. The bits region is the bit counts of the first
// streams but the last (u32 each; the last one's is the header's total minus them), then the
// streams.
inline constexpr size_t kStreams = 4;
inline constexpr size_t kStreamsMinElems = 4096;

ZIP_HD inline size_t stream_count(size_t m) {
  return m >= kStreamsMinElems ? kStreams : 1;
}
ZIP_HD inline size_t stream_table_bytes(size_t m) {
  return 4 * (stream_count(m) - 1);
}
ZIP_HD inline size_t stream_begin(size_t m, size_t k) {
  return m * k / stream_count(m);
}
ZIP_HD inline size_t bitmap_bytes(size_t n) {
  return (n + 7) / 8;
}

// ---- the tables both directions read ----------------------------------------------------------
// Pointers into one backend's memory (host or device), by value into a kernel.
struct ZipTablesView {
  const uint8_t* length = nullptr;   // [kNumCodebooks][kNumSymbols] code lengths
  const uint16_t* code = nullptr;    // [kNumCodebooks][kNumSymbols] bit-reversed codes
  const uint16_t* single = nullptr;  // [kNumCodebooks][kLutSize] symbol | length << 8
  const uint32_t* crc = nullptr;     // [256] CRC-32C (reflected 0x82F63B78) byte table
  CodebookChoiceParams choice;
};

// CRC-32C continued over more bytes, byte by byte (crc32c.h's values).
ZIP_HD inline uint32_t zip_crc32c(const uint32_t* table, const uint8_t* p, size_t bytes,
                                  uint32_t crc) {
  uint32_t c = ~crc;
  for (size_t i = 0; i < bytes; ++i) c = table[(c ^ p[i]) & 0xffu] ^ (c >> 8);
  return ~c;
}

// CRC of a chunk of `bytes` bytes with its crc field taken as 0.
ZIP_HD inline uint32_t zip_chunk_crc(const uint32_t* table, const uint8_t* chunk, size_t bytes) {
  const uint8_t zero[4] = {0, 0, 0, 0};
  uint32_t crc = zip_crc32c(table, chunk, 12, 0);
  crc = zip_crc32c(table, zero, 4, crc);
  return zip_crc32c(table, chunk + kChunkHeaderBytes, bytes - kChunkHeaderBytes, crc);
}

// ---- the codebook choice (exponent_model.h's choose_codebook) --------------------------------
// Pure arithmetic on integers read as doubles, one correctly rounded division per ratio, an
// explicit fma for the variance and sqrt: the same bits on every host and device.
ZIP_HD inline CodebookChoice zip_choose_codebook(const ExponentStats& st,
                                                 const CodebookChoiceParams& p) {
  int zero = kZeroLevels - 1;
  const double z = st.count ? double(st.exp0) / double(st.count) : 0.0;
  for (int l = 0; l < kZeroLevels - 1; ++l)
    if (z < p.zero_below[l]) {
      zero = l;
      break;
    }
  if (st.normal == 0) return CodebookChoice{uint16_t(zero), 127};
  const double m = double(st.sum) / double(st.normal);
  const double var = ::fma(-m, m, double(st.sum_sq) / double(st.normal));
  const double s = ::sqrt(var > 0.0 ? var : 0.0);
  int spread = 0;
  if (s > p.spread_above) {
    spread = 1;
    for (int l = 2; l < kSpreadLevels; ++l)
      if (s >= p.spread_at_least[l]) spread = l;
  }
  const double base = ::floor(m);
  int location = int((m - base) * kLocationLevels);
  location = location < 0 ? 0 : (location > kLocationLevels - 1 ? kLocationLevels - 1 : location);
  const int id = (spread * kLocationLevels + location) * kZeroLevels + zero;
  const double b = base < 0.0 ? 0.0 : (base > 255.0 ? 255.0 : base);
  return CodebookChoice{uint16_t(id), uint8_t(b)};
}

// ---- encoding ---------------------------------------------------------------------------------
// Exponent statistics of v[0, n) (of its elements other than +0.0 when nonzero_only).
template <class T>
ZIP_HD ExponentStats zip_stats(const typename T::U* v, size_t n, bool nonzero_only) {
  ExponentStats st;
  for (size_t i = 0; i < n; ++i) {
    if (nonzero_only && v[i] == 0) continue;
    const uint32_t e = T::exponent(v[i]);
    ++st.count;
    st.exp0 += e == 0;
    st.exact_zero += v[i] == 0;
    if (e != 0 && e != 255) {
      ++st.normal;
      st.sum += e;
      st.sum_sq += uint64_t(e) * e;
      st.min_normal = e < st.min_normal ? e : st.min_normal;
      st.max_normal = e > st.max_normal ? e : st.max_normal;
    }
  }
  return st;
}

// The symbol of exponent field e under a base (exponent_model.h).
ZIP_HD inline int zip_symbol(uint32_t e, int base) {
  if (e == 0) return kSymExp0;
  const int j = int(e) - base;
  return e != 255 && j >= -kWindowBelow && j <= kWindowAbove ? kSymWindow0 + j + kWindowBelow
                                                             : kSymEscape;
}

// LSB-first bit writer of one stream, a byte at a time.
struct ZipBitWriter {
  uint8_t* out;
  uint64_t acc = 0;
  unsigned filled = 0;
  ZIP_HD void put(uint32_t code, unsigned length) {
    acc |= uint64_t(code) << filled;
    filled += length;
    for (; filled >= 8; filled -= 8, acc >>= 8) *out++ = uint8_t(acc);
  }
  ZIP_HD void finish() {
    if (filled) *out++ = uint8_t(acc);
    acc = 0;
    filled = 0;
  }
};

// Which stream the coded element j is in, for j = 0, 1, 2, ... in turn.
struct ZipStreamCursor {
  size_t m;
  size_t k = 0;
  size_t next = stream_begin(m, 1);
  // Moves to element j's stream; true when that starts a new one.
  ZIP_HD bool advance_to(size_t j) {
    bool moved = false;
    for (; j == next && k + 1 < stream_count(m); next = stream_begin(m, k + 1)) {
      ++k;
      moved = true;
    }
    return moved;
  }
};

// Calls f(i, v[i]) for each coded element: all of them, or those other than +0.0 (sparse).
template <class T, class F>
ZIP_HD void zip_for_coded(const typename T::U* v, size_t n, bool sparse, F&& f) {
  for (size_t i = 0, j = 0; i < n; ++i)
    if (!sparse || v[i] != 0) f(j++, v[i]);
}

// Encodes v[0, n) into out (at least kChunkHeaderBytes + n * sizeof(U) bytes); returns the bytes
// written. info (optional): mode, book, escapes, exponent bits.
template <class T>
ZIP_HD size_t zip_encode_chunk(const typename T::U* v, size_t n, uint8_t* out, bool checksum,
                               const ZipTablesView& t, ChunkHeader* info = nullptr) {
  using U = typename T::U;
  const size_t raw_payload = n * sizeof(U);
  ChunkHeader h{ChunkMode::RAW, 0, 0, 0, 0, 0};
  size_t payload = raw_payload;
  uint8_t* body = out + kChunkHeaderBytes;
  const ExponentStats all = zip_stats<T>(v, n, false);
  if (n > 0 && all.exact_zero == n) {
    h.mode = ChunkMode::ZERO;
    payload = 0;
  } else if (n > 0) {
    const bool sparse = all.exact_zero * 12 >= n;
    const ExponentStats coded = sparse ? zip_stats<T>(v, n, true) : all;
    const size_t m = size_t(coded.count), l0 = bitmap_bytes(n), l1 = bitmap_bytes(l0);
    size_t head = 0;
    if (sparse) {  // the byte bitmap, then the element bitmap's nonzero bytes
      head = l1;
      for (size_t b = 0; b < l0; ++b) {
        bool any = false;
        for (size_t i = 8 * b; i < n && i < 8 * b + 8; ++i) any = any || v[i] != 0;
        head += any;
      }
    }
    const CodebookChoice choice = zip_choose_codebook(coded, t.choice);
    const uint8_t* length = t.length + size_t(choice.book) * kNumSymbols;
    const uint16_t* code = t.code + size_t(choice.book) * kNumSymbols;
    // Sizing pass: escapes and each stream's bits.
    const size_t streams = stream_count(m);
    uint64_t nbits[kStreams] = {0, 0, 0, 0};
    uint32_t escapes = 0;
    {
      ZipStreamCursor at{m};
      zip_for_coded<T>(v, n, sparse, [&](size_t j, U x) {
        at.advance_to(j);
        const int sym = zip_symbol(T::exponent(x), choice.base);
        nbits[at.k] += length[sym];
        escapes += sym == kSymEscape;
      });
    }
    size_t region = stream_table_bytes(m);
    uint64_t total_bits = 0;
    for (size_t k = 0; k < streams; ++k) {
      region += size_t((nbits[k] + 7) / 8);
      total_bits += nbits[k];
    }
    const size_t total = head + m * T::kRawBytes + escapes + region;
    if (total < raw_payload) {
      h = ChunkHeader{sparse ? ChunkMode::SPARSE : ChunkMode::DENSE,
                      choice.base,
                      choice.book,
                      escapes,
                      uint32_t(total_bits),
                      0};
      if (sparse) {
        for (size_t b = 0; b < l1; ++b) body[b] = 0;
        size_t at = l1;
        for (size_t b = 0; b < l0; ++b) {
          uint32_t byte = 0;
          for (size_t i = 8 * b; i < n && i < 8 * b + 8; ++i)
            byte |= uint32_t(v[i] != 0) << (i & 7);
          if (!byte) continue;
          body[b >> 3] = uint8_t(body[b >> 3] | (1u << (b & 7)));
          body[at++] = uint8_t(byte);
        }
      }
      uint8_t* raw = body + head;
      uint8_t* esc = raw + m * T::kRawBytes;
      uint8_t* bits = esc + escapes;
      for (size_t k = 0; k + 1 < streams; ++k) zip_store_u32(bits + 4 * k, uint32_t(nbits[k]));
      ZipBitWriter w{bits + stream_table_bytes(m)};
      ZipStreamCursor at{m};
      uint32_t found = 0;
      zip_for_coded<T>(v, n, sparse, [&](size_t j, U x) {
        if (at.advance_to(j)) w.finish();  // streams are packed back to back
        T::put_raw(raw + j * T::kRawBytes, x);
        const uint32_t e = T::exponent(x);
        const int sym = zip_symbol(e, choice.base);
        if (sym == kSymEscape) esc[found++] = uint8_t(e);
        w.put(code[sym], length[sym]);
      });
      w.finish();
      payload = total;
    }
  }
  if (h.mode == ChunkMode::RAW)
    for (size_t i = 0; i < n; ++i)
      for (size_t b = 0; b < sizeof(U); ++b) body[i * sizeof(U) + b] = uint8_t(v[i] >> (8 * b));
  write_chunk_header(out, h);
  const size_t bytes = kChunkHeaderBytes + payload;
  if (checksum) {
    h.crc = zip_chunk_crc(t.crc, out, bytes);
    write_chunk_header(out, h);
  }
  if (info) *info = h;
  return bytes;
}

// ---- decoding ---------------------------------------------------------------------------------
// Why a chunk cannot be decoded (zip_status_message gives the text).
enum class ZipStatus : uint32_t {
  OK = 0,
  SHORT_CHUNK,             // shorter than its header
  CHECKSUM,                // CRC-32C mismatch
  RAW_SIZE,                // a raw chunk's payload is not n elements
  ZERO_SIZE,               // a zero chunk has a payload
  UNKNOWN_MODE,            // mode byte not 1..4
  BYTEMAP_SHORT,           // sparse: payload shorter than its byte bitmap
  BYTEMAP_PAST_END,        // sparse: byte bitmap marks bytes past the element bitmap
  BITMAP_SHORT,            // sparse: payload shorter than its stored bitmap bytes
  BITMAP_EMPTY_BYTE,       // sparse: a stored bitmap byte is 0
  BITMAP_PAST_END,         // sparse: bitmap marks elements past the chunk's end
  ESCAPES_OVER_ELEMENTS,   // more escapes than coded elements
  PAYLOAD_SHORT,           // payload shorter than raw bytes and escapes
  BAD_CODEBOOK,            // codebook id out of range
  STREAM_TABLE_SHORT,      // bits region shorter than its stream table
  STREAM_BITS_OVER_TOTAL,  // stream bit counts exceed the header's total
  STREAM_PAST_END,         // a stream runs past the chunk's end
  REGION_SIZE,             // the streams do not fill the bits region exactly
  STREAM_ENDS_EARLY,       // a stream ends before its last element
  STREAM_BITS_LEFT,        // a stream holds bits past its last element
  ESCAPES_OVER,            // more escape symbols than escapes stored
  ESCAPES_UNDER,           // fewer escape symbols than escapes stored
};
inline constexpr uint32_t kNumZipStatuses = uint32_t(ZipStatus::ESCAPES_UNDER) + 1;

// The text of a status (host code).
const char* zip_status_message(ZipStatus status);

// Sinks: what a decoded element i becomes.
template <class T>
struct ZipStoreSink {  // out[i] = the element
  typename T::U* out;
  ZIP_HD void operator()(size_t i, typename T::U v) const { out[i] = v; }
};
ZIP_HD inline float zip_float_of_bits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
#endif
}
template <class T>
struct ZipAccumulateSink {  // acc[i] = or += the element as fp32 (one addition: exact order)
  float* acc;
  bool assign;
  ZIP_HD void operator()(size_t i, typename T::U v) const {
    const float x = zip_float_of_bits(T::fp32_bits(v));
    acc[i] = assign ? x : acc[i] + x;
  }
};

// One exponent stream being read: LSB-first bits at [bits, bits + nbytes), nbits of them.
struct ZipBitReader {
  const uint8_t* bits = nullptr;
  size_t nbytes = 0;
  uint64_t nbits = 0;
  uint64_t pos = 0;
  // The next kMaxCodeBits bits (zeros past the stream's bytes).
  ZIP_HD uint32_t peek() const {
    const size_t at = size_t(pos >> 3);
    uint32_t w = 0;
    for (size_t b = 0; b < 3 && at + b < nbytes; ++b) w |= uint32_t(bits[at + b]) << (8 * b);
    return (w >> (pos & 7)) & uint32_t(kLutSize - 1);
  }
};

// Decodes a chunk of `bytes` bytes holding n elements, handing each to sink(i, element).
template <class T, class Sink>
ZIP_HD ZipStatus zip_decode_chunk(const uint8_t* in, size_t bytes, size_t n, bool checksum,
                                  const ZipTablesView& t, const Sink& sink) {
  using U = typename T::U;
  if (bytes < kChunkHeaderBytes) return ZipStatus::SHORT_CHUNK;
  const ChunkHeader h = read_chunk_header(in);
  if (checksum && zip_chunk_crc(t.crc, in, bytes) != h.crc) return ZipStatus::CHECKSUM;
  const uint8_t* body = in + kChunkHeaderBytes;
  const size_t payload = bytes - kChunkHeaderBytes;
  switch (h.mode) {
    case ChunkMode::RAW:
      if (payload != n * sizeof(U)) return ZipStatus::RAW_SIZE;
      for (size_t i = 0; i < n; ++i) sink(i, T::load(body + i * sizeof(U)));
      return ZipStatus::OK;
    case ChunkMode::ZERO:
      if (payload != 0) return ZipStatus::ZERO_SIZE;
      for (size_t i = 0; i < n; ++i) sink(i, U(0));
      return ZipStatus::OK;
    case ChunkMode::DENSE:
    case ChunkMode::SPARSE:
      break;
    default:
      return ZipStatus::UNKNOWN_MODE;
  }
  const bool sparse = h.mode == ChunkMode::SPARSE;
  size_t m = n, head = 0;
  const size_t l0 = bitmap_bytes(n), l1 = bitmap_bytes(l0);
  if (sparse) {
    if (payload < l1) return ZipStatus::BYTEMAP_SHORT;
    size_t stored = 0;
    for (size_t b = 0; b < l1; ++b)
      for (unsigned x = body[b]; x; x &= x - 1) ++stored;
    if (l0 % 8 && (body[l1 - 1] >> (l0 % 8))) return ZipStatus::BYTEMAP_PAST_END;
    head = l1 + stored;
    if (payload < head) return ZipStatus::BITMAP_SHORT;
    m = 0;
    for (size_t k = 0; k < stored; ++k) {
      if (body[l1 + k] == 0) return ZipStatus::BITMAP_EMPTY_BYTE;
      for (unsigned x = body[l1 + k]; x; x &= x - 1) ++m;
    }
    if (n % 8) {
      unsigned last = 0;  // the stored byte of element byte l0 - 1, if any
      if ((body[(l0 - 1) >> 3] >> ((l0 - 1) & 7)) & 1) last = body[head - 1];
      if (last >> (n % 8)) return ZipStatus::BITMAP_PAST_END;
    }
  }
  if (h.escapes > m) return ZipStatus::ESCAPES_OVER_ELEMENTS;
  const size_t before_bits = head + m * T::kRawBytes + h.escapes;
  if (payload < before_bits) return ZipStatus::PAYLOAD_SHORT;
  const uint8_t* raw = body + head;
  const uint8_t* esc = raw + m * T::kRawBytes;
  const uint8_t* bits = esc + h.escapes;
  const size_t region = payload - before_bits;
  if (h.book >= kNumCodebooks) return ZipStatus::BAD_CODEBOOK;
  // The streams.
  const size_t streams = stream_count(m), table_bytes = stream_table_bytes(m);
  if (region < table_bytes) return ZipStatus::STREAM_TABLE_SHORT;
  ZipBitReader r[kStreams];
  uint64_t counted = 0;
  size_t offset = table_bytes;
  for (size_t k = 0; k < streams; ++k) {
    const uint64_t nbits = k + 1 < streams ? zip_load_u32(bits + 4 * k) : h.bits - counted;
    if (nbits > h.bits - counted) return ZipStatus::STREAM_BITS_OVER_TOTAL;
    counted += nbits;
    const size_t nbytes = size_t((nbits + 7) / 8);
    if (nbytes > region - offset) return ZipStatus::STREAM_PAST_END;
    r[k].bits = bits + offset;
    r[k].nbytes = nbytes;
    r[k].nbits = nbits;
    offset += nbytes;
  }
  if (offset != region) return ZipStatus::REGION_SIZE;
  // The elements in order: +0.0 where a sparse chunk's bitmap is clear, else the next coded one.
  const uint16_t* single = t.single + size_t(h.book) * kLutSize;
  const uint8_t bias = uint8_t(int(h.base) - kSymWindow0 - kWindowBelow);
  ZipStreamCursor at{m};
  uint32_t found = 0;
  size_t j = 0, stored_at = l1;
  unsigned map = 0xffu;
  for (size_t i = 0; i < n; ++i) {
    if (sparse && (i & 7) == 0)
      map = ((body[i >> 6] >> ((i >> 3) & 7)) & 1) ? body[stored_at++] : 0u;
    if (!((map >> (i & 7)) & 1)) {
      sink(i, U(0));
      continue;
    }
    if (at.advance_to(j) && r[at.k - 1].pos != r[at.k - 1].nbits)
      return ZipStatus::STREAM_BITS_LEFT;
    ZipBitReader& s = r[at.k];
    const uint16_t hit = single[s.peek()];
    const unsigned len = hit >> 8, sym = hit & 0xffu;
    if (s.pos + len > s.nbits) return ZipStatus::STREAM_ENDS_EARLY;
    s.pos += len;
    uint32_t e = sym >= unsigned(kSymWindow0) ? uint8_t(sym + bias) : 0u;
    if (sym == unsigned(kSymEscape)) {
      if (found >= h.escapes) return ZipStatus::ESCAPES_OVER;
      e = esc[found++];
    }
    sink(i, T::compose(raw + j * T::kRawBytes, e));
    ++j;
  }
  for (size_t k = at.k; k < streams; ++k)
    if (r[k].pos != r[k].nbits) return ZipStatus::STREAM_BITS_LEFT;
  if (found != h.escapes) return ZipStatus::ESCAPES_UNDER;
  return ZipStatus::OK;
}

#undef ZIP_HD

}  // namespace gossamer::comm::zip
