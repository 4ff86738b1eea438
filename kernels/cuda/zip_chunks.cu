// kernels/cuda/zip_chunks.cuh: one thread per chunk for encode and decode (portable_chunk.h),
// one block per chunk for gather.
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/memory.cuh"
#include "kernels/cuda/zip_chunks.cuh"

namespace gossamer::kernels::cuda {

namespace {

using comm::zip::ZipBf16;
using comm::zip::ZipF32;
using comm::zip::ZipTablesView;

constexpr unsigned kChunksPerBlock = 32;

size_t chunk_count(size_t n, size_t chunk_elems) {
  return (n + chunk_elems - 1) / chunk_elems;
}

template <class T>
__global__ void encode_kernel(const typename T::U* in, size_t n, size_t chunk_elems, bool checksum,
                              ZipTablesView tables, uint8_t* slots, uint32_t* sizes) {
  const size_t c = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t first = c * chunk_elems;
  if (first >= n) return;
  const size_t elems = n - first < chunk_elems ? n - first : chunk_elems;
  const size_t slot = comm::zip::kChunkHeaderBytes + chunk_elems * sizeof(typename T::U);
  sizes[c] = uint32_t(
      comm::zip::zip_encode_chunk<T>(in + first, elems, slots + c * slot, checksum, tables));
}

void encode(const void* in, size_t n, bool bf16, size_t chunk_elems, bool checksum,
            const ZipTablesView& tables, uint8_t* slots, uint32_t* sizes) {
  const size_t chunks = chunk_count(n, chunk_elems);
  if (chunks == 0) return;
  const unsigned blocks = unsigned((chunks + kChunksPerBlock - 1) / kChunksPerBlock);
  if (bf16)
    encode_kernel<ZipBf16><<<blocks, kChunksPerBlock, 0, stream()>>>(
        static_cast<const uint16_t*>(in), n, chunk_elems, checksum, tables, slots, sizes);
  else
    encode_kernel<ZipF32><<<blocks, kChunksPerBlock, 0, stream()>>>(
        static_cast<const uint32_t*>(in), n, chunk_elems, checksum, tables, slots, sizes);
  GOSSAMER_CUDA_LAUNCHED("zip encode_kernel");
}

__global__ void gather_kernel(const uint8_t* slots, size_t slot_bytes, const uint32_t* sizes,
                              const uint64_t* offsets, size_t chunks, uint8_t* out) {
  for (size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const uint8_t* from = slots + c * slot_bytes;
    uint8_t* to = out + offsets[c];
    for (size_t i = threadIdx.x; i < sizes[c]; i += blockDim.x) to[i] = from[i];
  }
}

void gather(const uint8_t* slots, size_t slot_bytes, const uint32_t* sizes, const uint64_t* offsets,
            size_t chunks, uint8_t* out) {
  if (chunks == 0) return;
  const unsigned blocks = unsigned(chunks < 65535 ? chunks : 65535);
  gather_kernel<<<blocks, 256, 0, stream()>>>(slots, slot_bytes, sizes, offsets, chunks, out);
  GOSSAMER_CUDA_LAUNCHED("zip gather_kernel");
}

template <class T, class Sink>
__device__ void decode_one(const uint8_t* message, const uint64_t* offsets, size_t c, size_t elems,
                           bool checksum, const ZipTablesView& tables, const Sink& sink,
                           uint32_t* status) {
  status[c] = uint32_t(comm::zip::zip_decode_chunk<T>(
      message + offsets[c], size_t(offsets[c + 1] - offsets[c]), elems, checksum, tables, sink));
}

template <class T>
__global__ void decode_kernel(const uint8_t* message, const uint64_t* offsets, size_t n,
                              size_t chunk_elems, bool checksum, ZipTablesView tables,
                              ZipTarget target, void* out, uint32_t* status) {
  using U = typename T::U;
  const size_t c = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t first = c * chunk_elems;
  if (first >= n) return;
  const size_t elems = n - first < chunk_elems ? n - first : chunk_elems;
  if (target == ZipTarget::STORE)
    decode_one<T>(message, offsets, c, elems, checksum, tables,
                  comm::zip::ZipStoreSink<T>{static_cast<U*>(out) + first}, status);
  else
    decode_one<T>(message, offsets, c, elems, checksum, tables,
                  comm::zip::ZipAccumulateSink<T>{static_cast<float*>(out) + first,
                                                  target == ZipTarget::ASSIGN_F32},
                  status);
}

void decode(const uint8_t* message, const uint64_t* offsets, size_t n, bool bf16,
            size_t chunk_elems, bool checksum, const ZipTablesView& tables, ZipTarget target,
            void* out, uint32_t* status) {
  const size_t chunks = chunk_count(n, chunk_elems);
  if (chunks == 0) return;
  const unsigned blocks = unsigned((chunks + kChunksPerBlock - 1) / kChunksPerBlock);
  if (bf16)
    decode_kernel<ZipBf16><<<blocks, kChunksPerBlock, 0, stream()>>>(
        message, offsets, n, chunk_elems, checksum, tables, target, out, status);
  else
    decode_kernel<ZipF32><<<blocks, kChunksPerBlock, 0, stream()>>>(
        message, offsets, n, chunk_elems, checksum, tables, target, out, status);
  GOSSAMER_CUDA_LAUNCHED("zip decode_kernel");
}

}  // namespace

const ZipChunkKernels kZipChunks{
    "cuda", &kMemory, encode, gather, decode,
};

}  // namespace gossamer::kernels::cuda
