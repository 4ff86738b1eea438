// Encoder and decoder of one chunk (chunk_codec.h). The hot loops are templated on the element
// type: a bf16 element is 1 sign+mantissa byte and an 8-bit exponent, an fp32 element 3 bytes
// and an 8-bit exponent. The bit writer adds four codes (at most 48 bits) between flushes; the
// decoder reads 64-bit windows and resolves up to four table entries (each up to six symbols)
// per window, then composes the elements from the symbols and the raw bytes, and patches the
// escaped exponents.
#include "comm/zip/chunk_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "comm/zip/crc32c.h"
#include "comm/zip/exponent_model.h"

namespace gossamer::comm::zip {

static_assert(std::endian::native == std::endian::little, "zip codec: little-endian only");

namespace {

struct Bf16 {
  using U = uint16_t;
  static constexpr size_t kRawBytes = 1;  // sign + mantissa
  static uint32_t exponent(U v) { return (v >> 7) & 0xffu; }
  static void put_raw(uint8_t* p, U v) { *p = uint8_t(((v >> 8) & 0x80u) | (v & 0x7fu)); }
  static U compose(const uint8_t* p, uint32_t e) {
    const uint32_t s = *p;
    return U(((s & 0x80u) << 8) | (e << 7) | (s & 0x7fu));
  }
};

struct F32 {
  using U = uint32_t;
  static constexpr size_t kRawBytes = 3;
  static uint32_t exponent(U v) { return (v >> 23) & 0xffu; }
  static void put_raw(uint8_t* p, U v) {
    const uint32_t s = (v & 0x7fffffu) | ((v >> 31) << 23);
    std::memcpy(p, &s, 3);
  }
  static U compose(const uint8_t* p, uint32_t e) {
    // (byte loads: a 3-byte memcpy into a 4-byte local compiles to a store-to-load stall)
    const uint32_t s = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16;
    return ((s >> 23) << 31) | (e << 23) | (s & 0x7fffffu);
  }
};

struct Header {
  ChunkMode mode;
  uint8_t base;
  uint16_t book;
  uint32_t escapes;
  uint32_t bits;
  uint32_t crc;
};

void write_header(uint8_t* out, const Header& h) {
  out[0] = uint8_t(h.mode);
  out[1] = h.base;
  std::memcpy(out + 2, &h.book, 2);
  std::memcpy(out + 4, &h.escapes, 4);
  std::memcpy(out + 8, &h.bits, 4);
  std::memcpy(out + 12, &h.crc, 4);
}

Header read_header(const uint8_t* in) {
  Header h{};
  h.mode = ChunkMode(in[0]);
  h.base = in[1];
  std::memcpy(&h.book, in + 2, 2);
  std::memcpy(&h.escapes, in + 4, 4);
  std::memcpy(&h.bits, in + 8, 4);
  std::memcpy(&h.crc, in + 12, 4);
  return h;
}

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

template <class T>
ExponentStats gather_stats(const typename T::U* v, size_t n) {
  uint64_t exp0 = 0, normal = 0, sum = 0, sum_sq = 0, zero = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t e = T::exponent(v[i]);
    const uint32_t is_normal = (e != 0) & (e != 255);
    exp0 += e == 0;
    zero += v[i] == 0;
    normal += is_normal;
    sum += is_normal * e;
    sum_sq += is_normal * e * e;
  }
  return ExponentStats{n, exp0, normal, sum, sum_sq, zero};
}

// The 256-entry encode table for a codebook and base: code | length << 16 | escape << 24.
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
    table[e] = uint32_t(book.code[size_t(sym)]) | uint32_t(book.length[size_t(sym)]) << 16 |
               uint32_t(sym == kSymEscape) << 24;
  }
}

struct DenseResult {
  uint32_t escapes = 0;
  uint64_t bits = 0;
};

// Writes n*kRawBytes raw bytes to raw, the escaped exponents to esc (capacity n + 1) and the bit
// stream to bits (capacity n * kMaxCodeBits / 8 + 16).
template <class T>
DenseResult encode_dense(const typename T::U* v, size_t n, const CodebookChoice& choice,
                         uint8_t* raw, uint8_t* esc, uint8_t* bits) {
  uint32_t table[256];
  encode_table(choice, table);
  uint64_t acc = 0;
  unsigned filled = 0;
  uint8_t* out = bits;
  uint32_t escapes = 0;
  auto put = [&](size_t i) {
    const uint32_t e = T::exponent(v[i]);
    T::put_raw(raw + i * T::kRawBytes, v[i]);
    const uint32_t c = table[e];
    acc |= uint64_t(c & 0xffffu) << filled;
    filled += (c >> 16) & 0xffu;
    esc[escapes] = uint8_t(e);
    escapes += c >> 24;
  };
  auto flush = [&] {
    std::memcpy(out, &acc, 8);
    out += filled >> 3;
    acc = (filled & ~7u) == 64 ? 0 : acc >> (filled & ~7u);
    filled &= 7u;
  };
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    put(i);
    put(i + 1);
    put(i + 2);
    put(i + 3);
    flush();
  }
  for (; i < n; ++i) {
    put(i);
    flush();
  }
  const uint64_t total = uint64_t(out - bits) * 8 + filled;
  if (filled) std::memcpy(out, &acc, 8);
  return {escapes, total};
}

// Decodes n symbols from the bit stream into sym (capacity n + 8) and the escape positions.
void decode_symbols(const Codebook& book, const uint8_t* bits, uint64_t nbits, size_t n,
                    uint32_t escapes, uint8_t* sym, uint32_t* escape_positions) {
  const size_t nbytes = size_t((nbits + 7) / 8);
  uint64_t pos = 0;
  size_t i = 0;
  uint32_t found = 0;
  constexpr uint64_t kMask = kLutSize - 1;
  auto escape_at = [&](size_t at) {
    if (found >= escapes)
      throw CorruptInput(strprintf("more escaped exponents than the %u stored", escapes));
    escape_positions[found++] = uint32_t(at);
  };
  while (i + 4 * kMaxSymbolsPerEntry <= n && (pos >> 3) + 8 <= nbytes) {
    uint64_t w = load64(bits + (pos >> 3)) >> (pos & 7);
    for (int r = 0; r < 4; ++r) {
      const DecodeEntry& e = book.multi[w & kMask];
      std::memcpy(sym + i, &e, 8);  // symbols (count and bits land past them, then overwritten)
      if (e.count == 0) {
        escape_at(i);
        sym[i] = kSymEscape;
        i += 1;
      } else {
        i += e.count;
      }
      w >>= e.bits;
      pos += e.bits;
    }
  }
  while (i < n) {
    uint64_t w = 0;
    const size_t at = size_t(pos >> 3);
    if (at < nbytes) std::memcpy(&w, bits + at, std::min<size_t>(8, nbytes - at));
    w >>= (pos & 7);
    const uint16_t hit = book.single[w & kMask];
    const unsigned s = hit & 0xffu, len = hit >> 8;
    if (pos + len > nbits)
      throw CorruptInput(strprintf("exponent bit stream ends after %zu of %zu elements", i, n));
    if (s == kSymEscape) escape_at(i);
    sym[i++] = uint8_t(s);
    pos += len;
  }
  if (pos != nbits)
    throw CorruptInput(strprintf("exponent bit stream holds %llu bits, %llu decoded",
                                 static_cast<unsigned long long>(nbits),
                                 static_cast<unsigned long long>(pos)));
  if (found != escapes)
    throw CorruptInput(strprintf("%u escaped exponents stored, %u decoded", escapes, found));
}

template <class T>
void decode_dense(const uint8_t* raw, const uint8_t* esc, const uint8_t* bits, const Header& h,
                  size_t n, typename T::U* out, ChunkScratch& s) {
  if (h.book >= kNumCodebooks)
    throw CorruptInput(strprintf("codebook %u outside [0, %d)", h.book, kNumCodebooks));
  const Codebook& book = codebook(h.book);
  if (s.symbols.size() < n + 8) s.symbols.resize(n + 8);
  if (s.escape_positions.size() < h.escapes) s.escape_positions.resize(h.escapes);
  decode_symbols(book, bits, h.bits, n, h.escapes, s.symbols.data(), s.escape_positions.data());
  uint8_t exponent_of[256] = {};
  for (int sym = kSymWindow0; sym < kNumSymbols; ++sym) {
    const int e = window_exponent(sym, h.base);
    exponent_of[sym] = uint8_t(e < 0 ? 0 : e);
  }
  const uint8_t* sym = s.symbols.data();
  for (size_t i = 0; i < n; ++i) out[i] = T::compose(raw + i * T::kRawBytes, exponent_of[sym[i]]);
  for (uint32_t k = 0; k < h.escapes; ++k) {
    const uint32_t p = s.escape_positions[k];
    out[p] = T::compose(raw + size_t(p) * T::kRawBytes, esc[k]);
  }
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

size_t bitmap_bytes(size_t n) {
  return (n + 7) / 8;
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
      std::memset(map, 0, l0);
      U* nz = gathered<U>(s, n);
      m = 0;
      for (size_t i = 0; i < n; ++i) {
        const bool keep = v[i] != 0;
        map[i >> 3] = uint8_t(map[i >> 3] | (uint32_t(keep) << (i & 7)));
        nz[m] = v[i];
        m += keep;
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
    const CodebookChoice choice = choose_codebook(sparse ? gather_stats<T>(coded, m) : stats);
    if (s.escapes.size() < m + 1) s.escapes.resize(m + 1);
    if (s.bits.size() < m * kMaxCodeBits / 8 + 16) s.bits.resize(m * kMaxCodeBits / 8 + 16);
    const DenseResult r =
        encode_dense<T>(coded, m, choice, body + head, s.escapes.data(), s.bits.data());
    const size_t total = head + m * T::kRawBytes + r.escapes + size_t((r.bits + 7) / 8);
    if (total < raw_payload) {
      h = Header{sparse ? ChunkMode::SPARSE : ChunkMode::DENSE,
                 choice.base,
                 choice.book,
                 r.escapes,
                 uint32_t(r.bits),
                 0};
      uint8_t* p = body + head + m * T::kRawBytes;
      std::memcpy(p, s.escapes.data(), r.escapes);
      std::memcpy(p + r.escapes, s.bits.data(), size_t((r.bits + 7) / 8));
      payload = total;
    }
  }
  if (h.mode == ChunkMode::RAW) std::memcpy(body, v, raw_payload);
  write_header(out, h);
  const size_t bytes = kChunkHeaderBytes + payload;
  if (checksum) {
    h.crc = chunk_crc(out, bytes);
    write_header(out, h);
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
  const Header h = read_header(in);
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
      std::memcpy(out, body, n * sizeof(U));
      return;
    case ChunkMode::ZERO:
      expect_payload(0);
      std::memset(out, 0, n * sizeof(U));
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
  expect_payload(head + m * T::kRawBytes + h.escapes + size_t((uint64_t(h.bits) + 7) / 8));
  const uint8_t* raw = body + head;
  const uint8_t* esc = raw + m * T::kRawBytes;
  const uint8_t* bits = esc + h.escapes;
  if (h.mode == ChunkMode::DENSE) {
    decode_dense<T>(raw, esc, bits, h, n, out, s);
    return;
  }
  U* nz = gathered<U>(s, m);
  decode_dense<T>(raw, esc, bits, h, m, nz, s);
  std::memset(out, 0, n * sizeof(U));
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
