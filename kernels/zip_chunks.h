// ZipChunkKernels: the zip codec's per-chunk work on one backend's memory (the CPU reference in
// kernels/cpu/zip_chunks.cpp, the CUDA kernels in kernels/cuda/zip_chunks.cu), each chunk by
// portable_chunk.h's functions. comm::zip::DeviceZipCodec drives them: it owns the buffers,
// reads back the chunk sizes and statuses, and writes or parses the message's header and size
// table on the host.
// Invariants: every pointer is in `memory` (tables: a view of copies there); chunk c covers
// elements [c * chunk_elems, min(n, (c + 1) * chunk_elems)); chunks are independent, so any
// order or parallelism gives the same bytes; the functions are ordered with the backend's other
// work (CUDA: cuda_context's stream) and return before it completes where the backend allows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/memory_ops.h"
#include "kernels/zip/portable_chunk.h"

namespace gossamer::kernels {

// What a decoded element becomes: stored as it is (bf16 or fp32 bits), or as fp32 assigned to
// or added into an accumulator.
enum class ZipTarget : uint8_t { STORE = 0, ASSIGN_F32 = 1, ADD_F32 = 2 };

struct ZipChunkKernels {
  const char* backend;
  const MemoryOps* memory;
  // Encodes every chunk of in[0, n) (bf16 when bf16, else fp32) into its slot, slots + c * slot
  // bytes (slot = kChunkHeaderBytes + chunk_elems * element size), and its size into sizes[c].
  void (*encode)(const void* in, size_t n, bool bf16, size_t chunk_elems, bool checksum,
                 const comm::zip::ZipTablesView& tables, uint8_t* slots, uint32_t* sizes);
  // Copies slot c's first sizes[c] bytes to out + offsets[c], for c < chunks.
  void (*gather)(const uint8_t* slots, size_t slot_bytes, const uint32_t* sizes,
                 const uint64_t* offsets, size_t chunks, uint8_t* out);
  // Decodes chunk c, message[offsets[c], offsets[c + 1]), into target (elements of its chunk);
  // status[c] = its ZipStatus (on an error, that chunk's elements are partly written).
  void (*decode)(const uint8_t* message, const uint64_t* offsets, size_t n, bool bf16,
                 size_t chunk_elems, bool checksum, const comm::zip::ZipTablesView& tables,
                 ZipTarget target, void* out, uint32_t* status);
};

}  // namespace gossamer::kernels
