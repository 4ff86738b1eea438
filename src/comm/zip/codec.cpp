// The zip message container (codec.h): header and size table, the parallel chunk loop of the
// encoder (each thread encodes a contiguous run of chunks at the run's worst-case position, then
// the runs are moved down in order, which never overwrites a run not yet moved) and of the
// decoder (chunk offsets from the size table).
#include "comm/zip/codec.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "comm/zip/crc32c.h"
#include "comm/zip/exponent_model.h"
#include "core/bf16.h"

namespace gossamer::comm::zip {

namespace {

constexpr uint32_t kMagic = 0x315a5047;  // "GPZ1"
constexpr uint8_t kVersion = 2;          // 2: four exponent streams per chunk
constexpr uint8_t kFlagChecksum = 1;
constexpr size_t kMaxChunkElems = size_t{1} << 24;

uint8_t dtype_code(DType dtype) {
  GOSSAMER_CHECK(dtype == DType::BF16 || dtype == DType::F32,
                 "zip: cannot compress %s (bf16 and fp32 only)", dtype_name(dtype));
  return dtype == DType::BF16 ? 1 : 2;
}

size_t chunk_count(size_t n, size_t chunk_elems) {
  return (n + chunk_elems - 1) / chunk_elems;
}

size_t elements_of_chunk(size_t c, size_t n, size_t chunk_elems) {
  return std::min(chunk_elems, n - c * chunk_elems);
}

struct MessageHeader {
  uint8_t dtype = 0, flags = 0;
  uint32_t chunk_elems = 0, chunks = 0;
  uint64_t n = 0;
  uint32_t fingerprint = 0, crc = 0;
};

void write_message_header(uint8_t* out, const MessageHeader& h) {
  std::memset(out, 0, kMessageHeaderBytes);
  std::memcpy(out, &kMagic, 4);
  out[4] = kVersion;
  out[5] = h.dtype;
  out[6] = h.flags;
  std::memcpy(out + 8, &h.chunk_elems, 4);
  std::memcpy(out + 12, &h.chunks, 4);
  std::memcpy(out + 16, &h.n, 8);
  std::memcpy(out + 24, &h.fingerprint, 4);
  std::memcpy(out + 28, &h.crc, 4);
}

// CRC of the header (its crc field excluded) and the size table.
uint32_t header_crc(const uint8_t* message, size_t chunks) {
  return crc32c(message + kMessageHeaderBytes, chunks * 4, crc32c(message, 28));
}

int thread_count(int requested, size_t chunks) {
  const int t = requested > 0 ? requested : omp_get_max_threads();
  return int(std::max<size_t>(1, std::min<size_t>(size_t(t), chunks)));
}

ChunkScratch& thread_scratch() {
  thread_local ChunkScratch scratch;
  return scratch;
}

// Runs body(first_chunk, end_chunk) on each thread's contiguous run; rethrows the first error.
template <class Body>
void for_chunk_runs(size_t chunks, int threads, Body body) {
  std::exception_ptr error;
  std::mutex mutex;
#pragma omp parallel num_threads(threads)
  {
    const size_t t = size_t(omp_get_thread_num()), nt = size_t(omp_get_num_threads());
    const size_t first = chunks * t / nt, end = chunks * (t + 1) / nt;
    try {
      body(t, first, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace

size_t message_head_bytes(std::span<const uint8_t> header, size_t message_bytes) {
  if (header.size() < kMessageHeaderBytes || message_bytes < kMessageHeaderBytes)
    throw CorruptInput(strprintf("zip: message of %zu bytes, shorter than its %zu-byte header",
                                 message_bytes, kMessageHeaderBytes));
  uint32_t chunks = 0;
  std::memcpy(&chunks, header.data() + 12, 4);
  if (message_bytes - kMessageHeaderBytes < size_t(chunks) * 4)
    throw CorruptInput(strprintf("zip: message of %zu bytes cannot hold its %u chunk sizes",
                                 message_bytes, chunks));
  return kMessageHeaderBytes + size_t(chunks) * 4;
}

MessageLayout parse_message_head(std::span<const uint8_t> head, size_t message_bytes, size_t n,
                                 DType dtype) {
  const uint8_t want = dtype_code(dtype);
  if (head.size() < kMessageHeaderBytes || message_bytes < kMessageHeaderBytes)
    throw CorruptInput(strprintf("zip: message of %zu bytes, shorter than its %zu-byte header",
                                 message_bytes, kMessageHeaderBytes));
  const uint8_t* p = head.data();
  uint32_t magic = 0;
  std::memcpy(&magic, p, 4);
  if (magic != kMagic) throw CorruptInput("zip: not a compressed message (bad magic)");
  if (p[4] != kVersion)
    throw CorruptInput(strprintf("zip: message format version %u, this build reads %u",
                                 unsigned(p[4]), unsigned(kVersion)));
  MessageHeader h;
  h.dtype = p[5];
  h.flags = p[6];
  std::memcpy(&h.chunk_elems, p + 8, 4);
  std::memcpy(&h.chunks, p + 12, 4);
  std::memcpy(&h.n, p + 16, 8);
  std::memcpy(&h.fingerprint, p + 24, 4);
  std::memcpy(&h.crc, p + 28, 4);
  if (h.chunk_elems == 0 || h.chunk_elems > kMaxChunkElems)
    throw CorruptInput(
        strprintf("zip: chunk size %u outside [1, %zu]", h.chunk_elems, kMaxChunkElems));
  if (h.chunks != chunk_count(h.n, h.chunk_elems))
    throw CorruptInput(strprintf("zip: %u chunks for %llu elements of %u per chunk", h.chunks,
                                 static_cast<unsigned long long>(h.n), h.chunk_elems));
  const size_t head_bytes = message_head_bytes(head, message_bytes);  // the sizes fit
  GOSSAMER_CHECK(head.size() >= head_bytes,
                 "zip: %zu bytes of a message's head given, its size table needs %zu", head.size(),
                 head_bytes);
  const uint32_t crc = header_crc(p, h.chunks);
  if (crc != h.crc)
    throw CorruptInput(
        strprintf("zip: header checksum mismatch (stored %08x, computed %08x)", h.crc, crc));
  if (h.dtype != want)
    throw CorruptInput(strprintf("zip: message holds %s, expected %s",
                                 h.dtype == 1   ? "bf16"
                                 : h.dtype == 2 ? "fp32"
                                                : "an unknown dtype",
                                 dtype_name(dtype)));
  if (h.flags & ~kFlagChecksum) throw CorruptInput("zip: unknown flags in the message header");
  if (h.n != n)
    throw CorruptInput(strprintf("zip: message holds %llu elements, expected %zu",
                                 static_cast<unsigned long long>(h.n), n));
  if (h.fingerprint != codebooks_fingerprint())
    throw CorruptInput(
        strprintf("zip: message encoded with other codebooks (fingerprint %08x, this build %08x)",
                  h.fingerprint, codebooks_fingerprint()));
  MessageLayout m;
  m.chunk_elems = h.chunk_elems;
  m.chunks = h.chunks;
  m.checksum = h.flags & kFlagChecksum;
  m.offsets.resize(size_t(h.chunks) + 1);
  size_t at = kMessageHeaderBytes + size_t(h.chunks) * 4;
  const size_t es = dtype_size(dtype);
  for (size_t c = 0; c < h.chunks; ++c) {
    uint32_t bytes = 0;
    std::memcpy(&bytes, p + kMessageHeaderBytes + c * 4, 4);
    const size_t elems = elements_of_chunk(c, n, h.chunk_elems);
    if (bytes < kChunkHeaderBytes || bytes > max_chunk_bytes(elems, dtype))
      throw CorruptInput(strprintf("zip: chunk %zu of %u: size %u outside [%zu, %zu]", c, h.chunks,
                                   bytes, kChunkHeaderBytes, kChunkHeaderBytes + elems * es));
    m.offsets[c] = at;
    at += bytes;
  }
  m.offsets[h.chunks] = at;
  if (at != message_bytes)
    throw CorruptInput(
        strprintf("zip: message of %zu bytes, its size table adds up to %zu", message_bytes, at));
  return m;
}

namespace {

MessageLayout parse(std::span<const uint8_t> in, size_t n, DType dtype) {
  return parse_message_head(in, in.size(), n, dtype);
}

// Decodes every chunk of a parsed message; sink(first_element, elements, decoded) consumes each
// (decoded points into thread scratch or directly into out).
template <class Sink>
void decode_chunks(std::span<const uint8_t> in, const MessageLayout& m, size_t n, DType dtype,
                   int threads, void* out, Sink sink) {
  const size_t chunk = m.chunk_elems, chunks = m.chunks, es = dtype_size(dtype);
  for_chunk_runs(chunks, thread_count(threads, chunks), [&](size_t, size_t first, size_t end) {
    ChunkScratch& scratch = thread_scratch();
    for (size_t c = first; c < end; ++c) {
      const size_t elems = elements_of_chunk(c, n, chunk);
      try {
        if (out) {
          decode_chunk(in.data() + m.offsets[c], m.offsets[c + 1] - m.offsets[c], elems, dtype,
                       static_cast<uint8_t*>(out) + c * chunk * es, m.checksum, scratch);
        } else {
          thread_local std::vector<uint16_t> decoded16;
          thread_local std::vector<uint32_t> decoded32;
          void* decoded = nullptr;
          if (dtype == DType::BF16) {
            if (decoded16.size() < elems) decoded16.resize(elems);
            decoded = decoded16.data();
          } else {
            if (decoded32.size() < elems) decoded32.resize(elems);
            decoded = decoded32.data();
          }
          decode_chunk(in.data() + m.offsets[c], m.offsets[c + 1] - m.offsets[c], elems, dtype,
                       decoded, m.checksum, scratch);
          sink(c * chunk, elems, decoded);
        }
      } catch (const CorruptInput& e) {
        throw CorruptInput(strprintf("zip: chunk %zu of %zu: %s", c, chunks, e.what()));
      }
    }
  });
}

}  // namespace

size_t write_message_head(uint8_t* head, size_t n, DType dtype, size_t chunk_elems, bool checksum) {
  GOSSAMER_CHECK(chunk_elems >= 1 && chunk_elems <= kMaxChunkElems,
                 "zip: chunk size %zu outside [1, %zu]", chunk_elems, kMaxChunkElems);
  MessageHeader h;
  h.dtype = dtype_code(dtype);
  h.flags = checksum ? kFlagChecksum : 0;
  const size_t chunks = chunk_count(n, chunk_elems);
  GOSSAMER_CHECK(chunks < (size_t{1} << 32), "zip: %zu chunks, at most 2^32 - 1", chunks);
  h.chunk_elems = uint32_t(chunk_elems);
  h.chunks = uint32_t(chunks);
  h.n = n;
  h.fingerprint = codebooks_fingerprint();
  write_message_header(head, h);
  h.crc = header_crc(head, chunks);
  write_message_header(head, h);
  size_t bytes = kMessageHeaderBytes + chunks * 4;
  for (size_t c = 0; c < chunks; ++c) {
    uint32_t b = 0;
    std::memcpy(&b, head + kMessageHeaderBytes + c * 4, 4);
    bytes += b;
  }
  return bytes;
}

size_t max_compressed_bytes(size_t n, DType dtype, size_t chunk_elems) {
  GOSSAMER_CHECK(chunk_elems >= 1 && chunk_elems <= kMaxChunkElems,
                 "zip: chunk size %zu outside [1, %zu]", chunk_elems, kMaxChunkElems);
  const size_t chunks = chunk_count(n, chunk_elems);
  return kMessageHeaderBytes + chunks * (4 + kChunkHeaderBytes) + n * dtype_size(dtype);
}

size_t compress(const void* in, size_t n, DType dtype, std::span<uint8_t> out,
                const CodecOptions& options, CodecStats* stats) {
  dtype_code(dtype);  // bf16 or fp32 only
  const size_t chunk = options.chunk_elems;
  const size_t need = max_compressed_bytes(n, dtype, chunk);
  GOSSAMER_CHECK(out.size() >= need, "zip: output of %zu bytes, compressing %zu %s needs %zu",
                 out.size(), n, dtype_name(dtype), need);
  GOSSAMER_CHECK(in != nullptr || n == 0, "zip: input is null but holds %zu elements", n);
  const size_t chunks = chunk_count(n, chunk), es = dtype_size(dtype);
  GOSSAMER_CHECK(chunks < (size_t{1} << 32), "zip: %zu chunks, at most 2^32 - 1", chunks);
  uint8_t* table = out.data() + kMessageHeaderBytes;
  uint8_t* data = table + chunks * 4;
  const size_t slot = kChunkHeaderBytes + chunk * es;  // worst case of a full chunk
  const int threads = thread_count(options.threads, chunks);
  std::vector<size_t> run_bytes(size_t(threads), 0), run_first(size_t(threads), 0);
  std::vector<ChunkInfo> infos(stats ? chunks : 0);
  for_chunk_runs(chunks, threads, [&](size_t t, size_t first, size_t end) {
    ChunkScratch& scratch = thread_scratch();
    uint8_t* at = data + first * slot;
    for (size_t c = first; c < end; ++c) {
      const size_t elems = elements_of_chunk(c, n, chunk);
      const size_t bytes =
          encode_chunk(static_cast<const uint8_t*>(in) + c * chunk * es, elems, dtype, at,
                       options.checksum, scratch, stats ? &infos[c] : nullptr);
      const uint32_t b = uint32_t(bytes);
      std::memcpy(table + c * 4, &b, 4);
      at += bytes;
    }
    run_first[t] = first;
    run_bytes[t] = size_t(at - (data + first * slot));
  });
  size_t at = 0;
  for (int t = 0; t < threads; ++t) {
    const uint8_t* from = data + run_first[size_t(t)] * slot;
    if (data + at != from) std::memmove(data + at, from, run_bytes[size_t(t)]);
    at += run_bytes[size_t(t)];
  }
  const size_t bytes = write_message_head(out.data(), n, dtype, chunk, options.checksum);
  if (stats) {
    *stats = CodecStats{};
    stats->chunks = chunks;
    for (const ChunkInfo& info : infos) {
      ++stats->chunks_by_mode[size_t(info.mode) - 1];
      stats->escapes += info.escapes;
      stats->exponent_bits += info.exponent_bits;
    }
  }
  GOSSAMER_CHECK(bytes == kMessageHeaderBytes + chunks * 4 + at,
                 "zip: size table adds up to %zu bytes, %zu written", bytes,
                 kMessageHeaderBytes + chunks * 4 + at);
  return bytes;
}

void decompress(std::span<const uint8_t> in, void* out, size_t n, DType dtype, int threads) {
  const MessageLayout m = parse(in, n, dtype);
  GOSSAMER_CHECK(out != nullptr || n == 0, "zip: output is null but holds %zu elements", n);
  decode_chunks(in, m, n, dtype, threads, out, [](size_t, size_t, const void*) {});
}

void decompress_accumulate(std::span<const uint8_t> in, float* acc, size_t n, DType dtype,
                           bool assign, int threads) {
  const MessageLayout m = parse(in, n, dtype);
  GOSSAMER_CHECK(acc != nullptr || n == 0, "zip: accumulator is null but holds %zu elements", n);
  decode_chunks(in, m, n, dtype, threads, nullptr,
                [&](size_t first, size_t elems, const void* decoded) {
                  float* a = acc + first;
                  if (dtype == DType::F32) {
                    const auto* v = static_cast<const uint32_t*>(decoded);
                    if (assign)
                      for (size_t i = 0; i < elems; ++i) a[i] = std::bit_cast<float>(v[i]);
                    else
                      for (size_t i = 0; i < elems; ++i) a[i] += std::bit_cast<float>(v[i]);
                  } else {
                    const auto* v = static_cast<const uint16_t*>(decoded);
                    if (assign)
                      for (size_t i = 0; i < elems; ++i) a[i] = bf16_to_float(v[i]);
                    else
                      for (size_t i = 0; i < elems; ++i) a[i] += bf16_to_float(v[i]);
                  }
                });
}

}  // namespace gossamer::comm::zip
