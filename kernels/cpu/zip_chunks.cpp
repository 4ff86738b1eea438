// kernels/cpu/zip_chunks.h: each chunk by portable_chunk.h, chunks spread over OpenMP threads
// (dynamic schedule: chunks differ in cost by mode).
#include "kernels/cpu/zip_chunks.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/memory.h"

namespace gossamer::kernels::cpu {

namespace {

using comm::zip::ZipBf16;
using comm::zip::ZipF32;
using comm::zip::ZipStatus;
using comm::zip::ZipTablesView;

size_t chunk_count(size_t n, size_t chunk_elems) {
  return (n + chunk_elems - 1) / chunk_elems;
}

template <class T>
void encode_all(const typename T::U* in, size_t n, size_t chunk_elems, bool checksum,
                const ZipTablesView& tables, uint8_t* slots, uint32_t* sizes) {
  const size_t slot = comm::zip::kChunkHeaderBytes + chunk_elems * sizeof(typename T::U);
  const long chunks = long(chunk_count(n, chunk_elems));
#pragma omp parallel for schedule(dynamic, 1)
  for (long c = 0; c < chunks; ++c) {
    const size_t first = size_t(c) * chunk_elems, elems = std::min(chunk_elems, n - first);
    sizes[c] = uint32_t(comm::zip::zip_encode_chunk<T>(in + first, elems, slots + size_t(c) * slot,
                                                       checksum, tables));
  }
}

void encode(const void* in, size_t n, bool bf16, size_t chunk_elems, bool checksum,
            const ZipTablesView& tables, uint8_t* slots, uint32_t* sizes) {
  if (bf16)
    encode_all<ZipBf16>(static_cast<const uint16_t*>(in), n, chunk_elems, checksum, tables, slots,
                        sizes);
  else
    encode_all<ZipF32>(static_cast<const uint32_t*>(in), n, chunk_elems, checksum, tables, slots,
                       sizes);
}

void gather(const uint8_t* slots, size_t slot_bytes, const uint32_t* sizes, const uint64_t* offsets,
            size_t chunks, uint8_t* out) {
#pragma omp parallel for schedule(static)
  for (long c = 0; c < long(chunks); ++c)
    std::memcpy(out + offsets[c], slots + size_t(c) * slot_bytes, sizes[c]);
}

template <class T, class MakeSink>
void decode_all(const uint8_t* message, const uint64_t* offsets, size_t n, size_t chunk_elems,
                bool checksum, const ZipTablesView& tables, uint32_t* status, MakeSink make_sink) {
  const long chunks = long(chunk_count(n, chunk_elems));
#pragma omp parallel for schedule(dynamic, 1)
  for (long c = 0; c < chunks; ++c) {
    const size_t first = size_t(c) * chunk_elems, elems = std::min(chunk_elems, n - first);
    status[c] =
        uint32_t(comm::zip::zip_decode_chunk<T>(message + offsets[c], offsets[c + 1] - offsets[c],
                                                elems, checksum, tables, make_sink(first)));
  }
}

template <class T>
void decode_as(const uint8_t* message, const uint64_t* offsets, size_t n, size_t chunk_elems,
               bool checksum, const ZipTablesView& tables, ZipTarget target, void* out,
               uint32_t* status) {
  using U = typename T::U;
  if (target == ZipTarget::STORE)
    decode_all<T>(message, offsets, n, chunk_elems, checksum, tables, status, [&](size_t first) {
      return comm::zip::ZipStoreSink<T>{static_cast<U*>(out) + first};
    });
  else
    decode_all<T>(message, offsets, n, chunk_elems, checksum, tables, status, [&](size_t first) {
      return comm::zip::ZipAccumulateSink<T>{static_cast<float*>(out) + first,
                                             target == ZipTarget::ASSIGN_F32};
    });
}

void decode(const uint8_t* message, const uint64_t* offsets, size_t n, bool bf16,
            size_t chunk_elems, bool checksum, const ZipTablesView& tables, ZipTarget target,
            void* out, uint32_t* status) {
  if (bf16)
    decode_as<ZipBf16>(message, offsets, n, chunk_elems, checksum, tables, target, out, status);
  else
    decode_as<ZipF32>(message, offsets, n, chunk_elems, checksum, tables, target, out, status);
}

}  // namespace

const ZipChunkKernels kZipChunks{
    .backend = "cpu",
    .memory = &kMemory,
    .encode = encode,
    .gather = gather,
    .decode = decode,
};

}  // namespace gossamer::kernels::cpu
