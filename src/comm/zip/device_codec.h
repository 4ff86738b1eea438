// DeviceZipCodec: the zip codec (codec.h) on a backend's memory, for collectives whose buffers
// live on a GPU. Input, message and output are all in the kernels' memory; the chunks are encoded
// and decoded there by the backend's kernels (kernels/zip_chunks.h, portable_chunk.h), and only
// the message's header and size table pass through the host (codec.h's write_message_head and
// parse_message_head). On host memory with the CPU reference kernels it is the same driver, which
// is how it is tested without a GPU.
// Invariants: compress writes the bytes compress() writes for the same input and options, so
// either codec decodes the other's messages; decompress gives decompress()'s elements bit for
// bit and decompress_accumulate decompress_accumulate()'s sums (bit for bit, except that a GPU's
// fp32 add turns every NaN into its one canonical NaN where the CPU's keeps the payload), and
// both throw CorruptInput naming the chunk wherever those throw (the output is then partly
// written, as theirs); host memory is never read or written through a device pointer; buffers
// grow to the largest call and are reused. Per call: compress reads back 4 bytes per chunk (the
// sizes) and uploads the head and the chunk offsets; decompress uploads the offsets and one
// "not run" status per chunk and reads back the head and the statuses (a chunk the kernel did not
// reach is an Error, not a pass). One thread and one stream: the kernels' last work of a call may
// still run when it returns, and the next call is ordered after it only on the same stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/zip/codec.h"
#include "core/buffer.h"
#include "kernels/zip_chunks.h"

namespace gossamer::comm::zip {

class DeviceZipCodec {
 public:
  // Uploads every codebook's tables into the kernels' memory (about 2.7 MB).
  explicit DeviceZipCodec(const kernels::ZipChunkKernels& kernels);

  const char* backend() const { return kernels_.backend; }

  // Compresses n bf16 or fp32 elements at `in` into `out` (out_bytes, at least
  // max_compressed_bytes); returns the message's size. options.threads is not used.
  size_t compress(const void* in, size_t n, DType dtype, uint8_t* out, size_t out_bytes,
                  const CodecOptions& options = {});

  // Decodes a message of `bytes` bytes holding exactly n elements of dtype into out.
  void decompress(const uint8_t* in, size_t bytes, void* out, size_t n, DType dtype);

  // Decodes it into fp32: acc[i] = value[i] when assign, else acc[i] += value[i].
  void decompress_accumulate(const uint8_t* in, size_t bytes, float* acc, size_t n, DType dtype,
                             bool assign);

 private:
  void decode(const uint8_t* in, size_t bytes, size_t n, DType dtype, kernels::ZipTarget target,
              void* out);

  const kernels::ZipChunkKernels kernels_;  // a copy: five pointers
  Buffer<uint8_t> lengths_;
  Buffer<uint16_t> codes_, singles_;
  Buffer<uint32_t> crc_;
  ZipTablesView tables_;
  Buffer<uint8_t> slots_;
  Buffer<uint32_t> sizes_, status_;
  Buffer<uint64_t> offsets_;
  std::vector<uint8_t> head_;  // host: a message's header and size table
  std::vector<uint32_t> host_status_;
};

}  // namespace gossamer::comm::zip
