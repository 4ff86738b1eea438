// Encoder and decoder of one chunk (chunk_codec.h). The hot loops are templated on the element
// type: a bf16 element is 1 sign+mantissa byte and an 8-bit exponent, an fp32 element 3 bytes
// and an 8-bit exponent. The encoder writes the raw bytes in one (vectorised) pass, then codes
// the exponent streams two at a time, each bit writer adding four codes (at most 48 bits) between
// flushes. The decoder reads 64-bit windows of all four streams in turn and resolves four table
// entries (each up to six symbols) per window, then composes the elements from the symbols and
// the raw bytes (vectorised) and patches the escaped exponents, found by searching the symbols.
#include "comm/zip/chunk_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "comm/zip/crc32c.h"
#include "comm/zip/exponent_model.h"

namespace gossamer::comm::zip {

static_assert(std::endian::native == std::endian::little, "zip codec: little-endian only");

namespace {

using Bf16 = ZipBf16;
using F32 = ZipF32;
using Header = ChunkHeader;

// CRC of a chunk with its crc field taken as 0.
uint32_t chunk_crc(const uint8_t* chunk, size_t bytes) {
  const uint8_t zero[4] = {0, 0, 0, 0};
  uint32_t crc = crc32c(chunk, 12);
  crc = crc32c(zero, 4, crc);
  return crc32c(chunk + kChunkHeaderBytes, bytes - kChunkHeaderBytes, crc);
}

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// One pass; the sums run in 32-bit blocks (254^2 * 4096 < 2^32) so the loop vectorises.
template <class T>
ExponentStats gather_stats(const typename T::U* v, size_t n) {
  constexpr size_t kBlock = 4096;
  ExponentStats st;
  st.count = n;
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t end = std::min(n, b + kBlock);
    uint32_t exp0 = 0, normal = 0, sum = 0, sum_sq = 0, zero = 0, lo = 255, hi = 0;
    for (size_t i = b; i < end; ++i) {
      const uint32_t e = T::exponent(v[i]);
      const uint32_t is_normal = (e != 0) & (e != 255);
      exp0 += e == 0;
      zero += v[i] == 0;
      normal += is_normal;
      sum += is_normal * e;
      sum_sq += is_normal * e * e;
      lo = std::min(lo, e + (is_normal ^ 1u) * 255u);  // arithmetic, not a branch: vectorises
      hi = std::max(hi, e * is_normal);
    }
    st.min_normal = std::min(st.min_normal, lo);
    st.max_normal = std::max(st.max_normal, hi);
    st.exp0 += exp0;
    st.exact_zero += zero;
    st.normal += normal;
    st.sum += sum;
    st.sum_sq += sum_sq;
  }
  return st;
}

// The 256-entry encode table for a codebook and base: code | length << 16.
void encode_table(const CodebookChoice& choice, uint32_t* table) {
  const Codebook& book = codebook(choice.book);
  for (int e = 0; e < 256; ++e) {
    int sym = kSymEscape;
    if (e == 0) {
      sym = kSymExp0;
    } else if (e != 255) {
      const int j = e - int(choice.base);
      if (j >= -kWindowBelow && j <= kWindowAbove) sym = kSymWindow0 + j + kWindowBelow;
    }
    table[e] = uint32_t(book.code[size_t(sym)]) | uint32_t(book.length[size_t(sym)]) << 16;
  }
}

// The exponent streams' layout (stream_count, stream_begin, stream_table_bytes): portable_chunk.h.
// Independent streams let the encoder and the decoder run several dependency chains side by side.

// The scratch one stream of m coded elements may fill: its codes and one 8-byte flush past them.
size_t max_stream_bytes(size_t m) {
  return (m / stream_count(m) + 1) * kMaxCodeBits / 8 + 16;
}

struct DenseResult {
  uint32_t escapes = 0;
  uint64_t bits = 0;  // all streams
  size_t region = 0;  // bytes of the bits region (table and streams)
};

// Bit writer of one stream: up to four codes (48 bits) between flushes. Escaped exponents are
// coded as the ESCAPE symbol here; collect_escapes stores their fields.
struct StreamWriter {
  uint64_t acc = 0;
  unsigned filled = 0;
  uint8_t* out;  // next byte of the stream
  template <class T>
  void put(typename T::U x, const uint32_t* table) {
    const uint32_t c = table[T::exponent(x)];
    acc |= uint64_t(c & 0xffffu) << filled;
    filled += c >> 16;
  }
  void flush() {
    std::memcpy(out, &acc, 8);
    out += filled >> 3;
    acc = (filled & ~7u) == 64 ? 0 : acc >> (filled & ~7u);
    filled &= 7u;
  }
};

// The raw bytes of m elements (vectorised for bf16; fp32 stores 4 bytes per element, each
// overlapping the next element's, all but the last).
template <class T>
void put_raws(const typename T::U* v, size_t m, uint8_t* raw) {
  if constexpr (T::kRawBytes == 3) {
    size_t i = 0;
    for (; i + 1 < m; ++i) {
      const uint32_t s = T::raw(v[i]);
      std::memcpy(raw + 3 * i, &s, 4);
    }
    if (i < m) T::put_raw(raw + 3 * i, v[i]);
  } else {
    for (size_t i = 0; i < m; ++i) T::put_raw(raw + i * T::kRawBytes, v[i]);
  }
}

// Stores the escaped exponent fields of m elements in element order (capacity m); returns how
// many. Escaped: neither 0 (its own symbol) nor inside the window (a field of 255 never is).
// Blocks of 64 are first tested as a whole (vectorised), and only blocks holding an escape are
// scanned one element at a time.
template <class T>
uint32_t collect_escapes(const typename T::U* v, size_t m, const CodebookChoice& choice,
                         uint8_t* esc) {
  const uint32_t lo = uint32_t(std::max(1, int(choice.base) - kWindowBelow)),
                 hi = uint32_t(std::min(254, int(choice.base) + kWindowAbove));
  auto escaped = [&](uint32_t e) { return (e != 0) & ((e < lo) | (e > hi)); };
  uint32_t count = 0;
  for (size_t b = 0; b < m; b += 64) {
    const size_t end = std::min(m, b + 64);
    uint32_t any = 0;
    for (size_t i = b; i < end; ++i) any |= escaped(T::exponent(v[i]));
    if (!any) continue;
    for (size_t i = b; i < end; ++i) {
      const uint32_t e = T::exponent(v[i]);
      if (escaped(e)) esc[count++] = uint8_t(e);
    }
  }
  return count;
}

// Whether a chunk with these statistics has no escaped exponent under this base: no exponent
// field 255 and every normal one inside the window (zeros and subnormals have their own symbol).
bool escape_free(const ExponentStats& st, const CodebookChoice& choice) {
  if (st.exp0 + st.normal != st.count) return false;
  return st.normal == 0 || (int(st.min_normal) >= int(choice.base) - kWindowBelow &&
                            int(st.max_normal) <= int(choice.base) + kWindowAbove);
}

// Codes L streams side by side (more than two writers no longer fit the registers).
template <class T, size_t L>
void encode_lanes(const typename T::U* v, const size_t* begin, const uint32_t* table,
                  StreamWriter* w) {
  size_t common = begin[1] - begin[0];
  for (size_t k = 1; k < L; ++k) common = std::min(common, begin[k + 1] - begin[k]);
  size_t j = 0;
  for (; j + 4 <= common; j += 4) {
    for (size_t r = 0; r < 4; ++r)
      for (size_t k = 0; k < L; ++k) w[k].template put<T>(v[begin[k] + j + r], table);
    for (size_t k = 0; k < L; ++k) w[k].flush();
  }
  for (size_t k = 0; k < L; ++k)
    for (size_t i = begin[k] + j; i < begin[k + 1]; ++i) {
      w[k].template put<T>(v[i], table);
      w[k].flush();
    }
}

// Writes m*kRawBytes raw bytes to raw, the escaped exponents in element order to esc (capacity
// m) and the bits region to bits (capacity stream_table_bytes + S * max_stream_bytes).
// scratch: S * max_stream_bytes(m) bytes for the streams before they are packed. escapes false:
// the statistics show that none can occur (escape_free), and the search for them is skipped.
template <class T>
DenseResult encode_dense(const typename T::U* v, size_t m, const CodebookChoice& choice,
                         bool escapes, uint8_t* raw, uint8_t* esc, uint8_t* bits,
                         uint8_t* scratch) {
  put_raws<T>(v, m, raw);
  DenseResult result;
  result.escapes = escapes ? collect_escapes<T>(v, m, choice, esc) : 0;
  uint32_t table[256];  // code | length << 16
  encode_table(choice, table);
  const size_t streams = stream_count(m), cap = max_stream_bytes(m);
  StreamWriter w[kStreams];
  size_t begin[kStreams + 1];
  for (size_t k = 0; k <= streams; ++k) begin[k] = stream_begin(m, k);
  for (size_t k = 0; k < streams; ++k) w[k].out = scratch + k * cap;
  if (streams == 1)
    encode_lanes<T, 1>(v, begin, table, w);
  else
    for (size_t k = 0; k < streams; k += 2) encode_lanes<T, 2>(v, begin + k, table, w + k);
  const size_t table_bytes = stream_table_bytes(m);
  uint8_t* packed = bits + table_bytes;
  for (size_t k = 0; k < streams; ++k) {
    const uint8_t* stream = scratch + k * cap;
    const uint64_t nbits = uint64_t(w[k].out - stream) * 8 + w[k].filled;
    if (w[k].filled) std::memcpy(w[k].out, &w[k].acc, 8);
    if (k + 1 < streams) {
      const uint32_t b32 = uint32_t(nbits);
      std::memcpy(bits + 4 * k, &b32, 4);
    }
    const size_t nbytes = size_t((nbits + 7) / 8);
    std::memcpy(packed, stream, nbytes);
    packed += nbytes;
    result.bits += nbits;
  }
  result.region = size_t(packed - bits);
  return result;
}

// Bit reader of one stream.
struct StreamReader {
  const uint8_t* bits;
  uint64_t nbits;
  size_t nbytes;
  uint64_t pos = 0;
  size_t i;    // next symbol (index into the chunk's symbols)
  size_t end;  // one past the stream's last symbol
};

constexpr uint64_t kLutMask = kLutSize - 1;
// Four entries advance a stream by at most 24 symbols and write 2 bytes past that: 32 keeps the
// writes inside the stream's own symbols (the next stream is being decoded alongside).
constexpr size_t kFastSymbols = 32;

bool fast_ahead(const StreamReader& s) {
  return s.i + kFastSymbols <= s.end && (s.pos >> 3) + 8 <= s.nbytes;
}

// Resolves four table entries (up to six symbols each, written 8 bytes at a time: count and
// bits land past the symbols and are overwritten) from one 64-bit window of each of L streams.
template <size_t L>
void decode_windows(const Codebook& book, StreamReader* r, uint8_t* sym) {
  uint64_t w[L];
  for (size_t k = 0; k < L; ++k) w[k] = load64(r[k].bits + (r[k].pos >> 3)) >> (r[k].pos & 7);
  for (int round = 0; round < 4; ++round)
    for (size_t k = 0; k < L; ++k) {
      const DecodeEntry& e = book.multi[w[k] & kLutMask];
      std::memcpy(sym + r[k].i, &e, 8);
      r[k].i += e.count;
      w[k] >>= e.bits;
      r[k].pos += e.bits;
    }
}

// Decodes the streams into sym (capacity: the chunk's symbols + 8): all of them side by side
// while each has room for the fast loop, then each one's rest alone, its tail one symbol at a
// time with bounded reads.
void decode_symbols(const Codebook& book, StreamReader* r, size_t streams, uint8_t* sym) {
  if (streams == kStreams)
    while (std::all_of(r, r + kStreams, fast_ahead)) decode_windows<kStreams>(book, r, sym);
  for (size_t k = 0; k < streams; ++k) {
    StreamReader& s = r[k];
    while (fast_ahead(s)) decode_windows<1>(book, &s, sym);
    while (s.i < s.end) {
      uint64_t w = 0;
      const size_t at = size_t(s.pos >> 3);
      if (at < s.nbytes) std::memcpy(&w, s.bits + at, std::min<size_t>(8, s.nbytes - at));
      w >>= (s.pos & 7);
      const uint16_t hit = book.single[w & kLutMask];
      const unsigned len = hit >> 8;
      if (s.pos + len > s.nbits)
        throw CorruptInput(strprintf("exponent bit stream %zu ends before its last element", k));
      sym[s.i++] = uint8_t(hit & 0xffu);
      s.pos += len;
    }
    if (s.pos != s.nbits)
      throw CorruptInput(strprintf("exponent bit stream %zu holds %llu bits, %llu decoded", k,
                                   static_cast<unsigned long long>(s.nbits),
                                   static_cast<unsigned long long>(s.pos)));
  }
}

// Parses the bits region of m coded elements (region bytes at bits, total bits from the header)
// into one reader per stream; returns the number of streams. Throws CorruptInput when the counts
// do not add up.
size_t read_streams(const uint8_t* bits, size_t region, uint64_t total, size_t m, StreamReader* r) {
  const size_t streams = stream_count(m), table_bytes = stream_table_bytes(m);
  if (region < table_bytes)
    throw CorruptInput(
        strprintf("exponent bits region of %zu bytes, shorter than its table", region));
  uint64_t counted = 0;
  size_t offset = table_bytes;
  for (size_t k = 0; k < streams; ++k) {
    uint64_t nbits = total - counted;
    if (k + 1 < streams) {
      uint32_t b32;
      std::memcpy(&b32, bits + 4 * k, 4);
      nbits = b32;
    }
    if (nbits > total - counted)
      throw CorruptInput(strprintf("exponent bit streams hold more than the %llu bits stored",
                                   static_cast<unsigned long long>(total)));
    counted += nbits;
    const size_t nbytes = size_t((nbits + 7) / 8);
    if (nbytes > region - offset)
      throw CorruptInput("exponent bit streams run past the chunk's end");
    r[k] =
        StreamReader{bits + offset, nbits, nbytes, 0, stream_begin(m, k), stream_begin(m, k + 1)};
    offset += nbytes;
  }
  if (offset != region)
    throw CorruptInput(
        strprintf("exponent bits region of %zu bytes, its streams take %zu", region, offset));
  return streams;
}

template <class T>
void decode_dense(const uint8_t* raw, const uint8_t* esc, const uint8_t* bits, size_t region,
                  const Header& h, size_t n, typename T::U* out, ChunkScratch& s) {
  if (h.book >= kNumCodebooks)
    throw CorruptInput(strprintf("codebook %u outside [0, %d)", h.book, kNumCodebooks));
  const Codebook& book = codebook(h.book);
  StreamReader readers[kStreams];
  const size_t streams = read_streams(bits, region, h.bits, n, readers);
  if (s.symbols.size() < n + 8) s.symbols.resize(n + 8);
  uint8_t* sym = s.symbols.data();
  decode_symbols(book, readers, streams, sym);
  // Window symbol -> exponent base + (sym - kSymWindow0) - kWindowBelow; EXP0 and ESCAPE -> 0
  // (escapes are patched below). Arithmetic, not a table, so the loop vectorises.
  const uint8_t bias = uint8_t(int(h.base) - kSymWindow0 - kWindowBelow);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t e = sym[i] >= kSymWindow0 ? uint8_t(sym[i] + bias) : uint8_t(0);
    out[i] = T::compose(raw + i * T::kRawBytes, e);
  }
  uint32_t found = 0;
  for (const uint8_t* p = sym;
       (p = static_cast<const uint8_t*>(std::memchr(p, kSymEscape, size_t(sym + n - p)))) !=
       nullptr;
       ++p) {
    if (found >= h.escapes)
      throw CorruptInput(strprintf("more escaped exponents than the %u stored", h.escapes));
    const size_t at = size_t(p - sym);
    out[at] = T::compose(raw + at * T::kRawBytes, esc[found++]);
  }
  if (found != h.escapes)
    throw CorruptInput(strprintf("%u escaped exponents stored, %u decoded", h.escapes, found));
}

// The scratch buffer for n gathered elements of type U.
template <class U>
U* gathered(ChunkScratch& s, size_t n) {
  auto& v = [&]() -> std::vector<U>& {
    if constexpr (sizeof(U) == 2)
      return s.values16;
    else
      return s.values32;
  }();
  if (v.size() < n) v.resize(n);
  return v.data();
}

template <class T>
size_t encode(const typename T::U* v, size_t n, uint8_t* out, bool checksum, ChunkScratch& s,
              ChunkInfo* info) {
  using U = typename T::U;
  const size_t raw_payload = n * sizeof(U);
  const ExponentStats stats = gather_stats<T>(v, n);
  Header h{ChunkMode::RAW, 0, 0, 0, 0, 0};
  size_t payload = raw_payload;
  uint8_t* body = out + kChunkHeaderBytes;
  if (n > 0 && stats.exact_zero == n) {
    h.mode = ChunkMode::ZERO;
    payload = 0;
  } else if (n > 0) {
    const bool sparse = stats.exact_zero * 12 >= n;
    const U* coded = v;
    size_t m = n, head = 0;
    if (sparse) {  // the element bitmap, then only its nonzero bytes behind a byte bitmap
      const size_t l0 = bitmap_bytes(n), l1 = bitmap_bytes(l0);
      if (s.bitmap.size() < l0) s.bitmap.resize(l0);
      uint8_t* map = s.bitmap.data();
      U* nz = gathered<U>(s, n);
      m = 0;
      for (size_t b = 0; b < l0; ++b) {  // each bitmap byte built in a register
        uint32_t byte = 0;
        for (size_t i = b * 8, end = std::min(n, i + 8); i < end; ++i) {
          const uint32_t keep = v[i] != 0;
          byte |= keep << (i & 7);
          nz[m] = v[i];
          m += keep;
        }
        map[b] = uint8_t(byte);
      }
      std::memset(body, 0, l1);
      head = l1;
      for (size_t b = 0; b < l0; ++b) {
        if (!map[b]) continue;
        body[b >> 3] = uint8_t(body[b >> 3] | (1u << (b & 7)));
        body[head++] = map[b];
      }
      coded = nz;
    }
    const ExponentStats coded_stats = sparse ? gather_stats<T>(coded, m) : stats;
    const CodebookChoice choice = choose_codebook(coded_stats);
    if (s.escapes.size() < m + 1) s.escapes.resize(m + 1);
    const size_t streams_bytes = stream_count(m) * max_stream_bytes(m);
    if (s.bits.size() < stream_table_bytes(m) + streams_bytes)
      s.bits.resize(stream_table_bytes(m) + streams_bytes);
    if (s.streams.size() < streams_bytes) s.streams.resize(streams_bytes);
    const DenseResult r =
        encode_dense<T>(coded, m, choice, !escape_free(coded_stats, choice), body + head,
                        s.escapes.data(), s.bits.data(), s.streams.data());
    const size_t total = head + m * T::kRawBytes + r.escapes + r.region;
    if (total < raw_payload) {
      h = Header{sparse ? ChunkMode::SPARSE : ChunkMode::DENSE,
                 choice.base,
                 choice.book,
                 r.escapes,
                 uint32_t(r.bits),
                 0};
      uint8_t* p = body + head + m * T::kRawBytes;
      std::memcpy(p, s.escapes.data(), r.escapes);
      std::memcpy(p + r.escapes, s.bits.data(), r.region);
      payload = total;
    }
  }
  // (n may be 0 with a null v: memcpy must not see the null pointer)
  if (h.mode == ChunkMode::RAW && raw_payload) std::memcpy(body, v, raw_payload);
  write_chunk_header(out, h);
  const size_t bytes = kChunkHeaderBytes + payload;
  if (checksum) {
    h.crc = chunk_crc(out, bytes);
    write_chunk_header(out, h);
  }
  if (info) *info = ChunkInfo{h.mode, h.book, h.escapes, h.bits};
  return bytes;
}

template <class T>
void decode(const uint8_t* in, size_t bytes, size_t n, bool checksum, typename T::U* out,
            ChunkScratch& s) {
  using U = typename T::U;
  if (bytes < kChunkHeaderBytes)
    throw CorruptInput(strprintf("chunk of %zu bytes, shorter than its header", bytes));
  const Header h = read_chunk_header(in);
  if (checksum) {
    const uint32_t crc = chunk_crc(in, bytes);
    if (crc != h.crc)
      throw CorruptInput(strprintf("checksum mismatch (stored %08x, computed %08x)", h.crc, crc));
  }
  const uint8_t* body = in + kChunkHeaderBytes;
  const size_t payload = bytes - kChunkHeaderBytes;
  auto expect_payload = [&](size_t expected) {
    if (payload != expected)
      throw CorruptInput(strprintf("%s chunk of %zu elements holds %zu payload bytes, expected %zu",
                                   chunk_mode_name(h.mode), n, payload, expected));
  };
  switch (h.mode) {
    case ChunkMode::RAW:
      expect_payload(n * sizeof(U));
      if (n) std::memcpy(out, body, n * sizeof(U));
      return;
    case ChunkMode::ZERO:
      expect_payload(0);
      if (n) std::memset(out, 0, n * sizeof(U));
      return;
    case ChunkMode::DENSE:
    case ChunkMode::SPARSE:
      break;
    default:
      throw CorruptInput(strprintf("unknown chunk mode %u", unsigned(in[0])));
  }
  size_t m = n, head = 0;
  const size_t l0 = bitmap_bytes(n), l1 = bitmap_bytes(l0);
  if (h.mode == ChunkMode::SPARSE) {
    if (payload < l1)
      throw CorruptInput(
          strprintf("sparse chunk of %zu payload bytes, shorter than its byte bitmap", payload));
    size_t stored = 0;
    for (size_t b = 0; b < l1; ++b) stored += size_t(std::popcount(unsigned(body[b])));
    if (l0 % 8 && (body[l1 - 1] >> (l0 % 8)))
      throw CorruptInput("sparse chunk's byte bitmap marks bytes past the element bitmap's end");
    head = l1 + stored;
    if (payload < head)
      throw CorruptInput(strprintf(
          "sparse chunk of %zu payload bytes, shorter than its %zu bitmap bytes", payload, head));
    m = 0;
    for (size_t k = 0; k < stored; ++k) {
      const unsigned byte = body[l1 + k];
      if (byte == 0) throw CorruptInput("sparse chunk stores an empty bitmap byte");
      m += size_t(std::popcount(byte));
    }
    if (n % 8) {
      size_t last = 0;  // the stored byte of element byte l0 - 1, if any
      if ((body[(l0 - 1) >> 3] >> ((l0 - 1) & 7)) & 1) last = body[head - 1];
      if (last >> (n % 8))
        throw CorruptInput("sparse chunk's bitmap marks elements past the chunk's end");
    }
  }
  if (h.escapes > m)
    throw CorruptInput(strprintf("%u escaped exponents for %zu elements", h.escapes, m));
  const size_t before_bits = head + m * T::kRawBytes + h.escapes;
  if (payload < before_bits)
    throw CorruptInput(
        strprintf("%s chunk of %zu elements holds %zu payload bytes, at least %zu "
                  "expected",
                  chunk_mode_name(h.mode), m, payload, before_bits));
  const uint8_t* raw = body + head;
  const uint8_t* esc = raw + m * T::kRawBytes;
  const uint8_t* bits = esc + h.escapes;
  const size_t region = payload - before_bits;
  if (h.mode == ChunkMode::DENSE) {
    decode_dense<T>(raw, esc, bits, region, h, n, out, s);
    return;
  }
  U* nz = gathered<U>(s, m);
  decode_dense<T>(raw, esc, bits, region, h, m, nz, s);
  if (n) std::memset(out, 0, n * sizeof(U));
  size_t k = 0, stored = l1;
  for (size_t b = 0; b < l0; ++b) {
    if (!((body[b >> 3] >> (b & 7)) & 1)) continue;
    for (unsigned byte = body[stored++]; byte; byte &= byte - 1)
      out[b * 8 + size_t(std::countr_zero(byte))] = nz[k++];
  }
}

}  // namespace

const char* chunk_mode_name(ChunkMode mode) {
  switch (mode) {
    case ChunkMode::RAW:
      return "raw";
    case ChunkMode::ZERO:
      return "zero";
    case ChunkMode::DENSE:
      return "dense";
    case ChunkMode::SPARSE:
      return "sparse";
  }
  return "unknown";
}

size_t encode_chunk(const void* in, size_t n, DType dtype, uint8_t* out, bool checksum,
                    ChunkScratch& scratch, ChunkInfo* info) {
  if (dtype == DType::BF16)
    return encode<Bf16>(static_cast<const uint16_t*>(in), n, out, checksum, scratch, info);
  GOSSAMER_CHECK(dtype == DType::F32, "zip: cannot compress %s (bf16 and fp32 only)",
                 dtype_name(dtype));
  return encode<F32>(static_cast<const uint32_t*>(in), n, out, checksum, scratch, info);
}

void decode_chunk(const uint8_t* in, size_t bytes, size_t n, DType dtype, void* out, bool checksum,
                  ChunkScratch& scratch) {
  if (dtype == DType::BF16)
    return decode<Bf16>(in, bytes, n, checksum, static_cast<uint16_t*>(out), scratch);
  GOSSAMER_CHECK(dtype == DType::F32, "zip: cannot decompress %s (bf16 and fp32 only)",
                 dtype_name(dtype));
  decode<F32>(in, bytes, n, checksum, static_cast<uint32_t*>(out), scratch);
}

}  // namespace gossamer::comm::zip
