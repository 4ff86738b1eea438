// DeviceZipCodec (device_codec.h): the tables uploaded once; compress = encode into worst-case
// slots, read back the sizes, write the head on the host, upload it and the offsets, gather the
// chunks behind it; decode = read back the head, parse it, upload the offsets, decode, read back
// the statuses.
#include "comm/zip/device_codec.h"

#include "comm/zip/zip_tables.h"

namespace gossamer::comm::zip {

namespace {

// Grows b to at least n elements of memory (never shrinks; new memory zero-filled).
template <class T>
T* grown(Buffer<T>& b, size_t n, const MemoryOps& memory) {
  if (b.size() < n) b = Buffer<T>(n, memory);
  return b.data();
}

template <class T>
Buffer<T> uploaded(const std::vector<T>& host, const MemoryOps& memory) {
  Buffer<T> b(host.size(), memory);
  b.upload(host.data(), host.size());
  return b;
}

// A status no kernel writes: the chunk was not reached.
constexpr uint32_t kNotDecoded = 0xffffffffu;

bool is_bf16(DType dtype) {
  GOSSAMER_CHECK(dtype == DType::BF16 || dtype == DType::F32,
                 "zip: cannot compress %s (bf16 and fp32 only)", dtype_name(dtype));
  return dtype == DType::BF16;
}

}  // namespace

DeviceZipCodec::DeviceZipCodec(const kernels::ZipChunkKernels& kernels) : kernels_(kernels) {
  const ZipTables& t = zip_tables();
  const MemoryOps& memory = *kernels_.memory;
  lengths_ = uploaded(t.length, memory);
  codes_ = uploaded(t.code, memory);
  singles_ = uploaded(t.single, memory);
  crc_ = uploaded(t.crc, memory);
  tables_ = t.view();
  tables_.length = lengths_.data();
  tables_.code = codes_.data();
  tables_.single = singles_.data();
  tables_.crc = crc_.data();
}

size_t DeviceZipCodec::compress(const void* in, size_t n, DType dtype, uint8_t* out,
                                size_t out_bytes, const CodecOptions& options) {
  const bool bf16 = is_bf16(dtype);
  const size_t chunk = options.chunk_elems;
  const size_t need = max_compressed_bytes(n, dtype, chunk);  // checks the chunk size
  GOSSAMER_CHECK(out_bytes >= need, "zip: output of %zu bytes, compressing %zu %s needs %zu",
                 out_bytes, n, dtype_name(dtype), need);
  GOSSAMER_CHECK(in != nullptr || n == 0, "zip: input is null but holds %zu elements", n);
  const MemoryOps& memory = *kernels_.memory;
  const size_t chunks = (n + chunk - 1) / chunk,
               slot = kChunkHeaderBytes + chunk * dtype_size(dtype);
  GOSSAMER_CHECK(chunks < (size_t{1} << 32), "zip: %zu chunks, at most 2^32 - 1", chunks);
  const size_t head_bytes = kMessageHeaderBytes + chunks * 4;
  head_.assign(head_bytes, 0);
  if (chunks > 0) {
    uint8_t* slots = grown(slots_, chunks * slot, memory);
    uint32_t* sizes = grown(sizes_, chunks, memory);
    memory.zero(sizes, chunks * 4);  // 0: not encoded (no chunk is shorter than its header)
    kernels_.encode(in, n, bf16, chunk, options.checksum, tables_, slots, sizes);
    memory.download(head_.data() + kMessageHeaderBytes, sizes, chunks * 4);
  }
  const size_t bytes = write_message_head(head_.data(), n, dtype, chunk, options.checksum);
  // The decoder's own checks of the head (every size in [header, worst case], the sum) give the
  // chunks' offsets; a failure here is the kernels' (a chunk left unencoded keeps size 0).
  MessageLayout layout;
  try {
    layout = parse_message_head(head_, bytes, n, dtype);
  } catch (const CorruptInput& e) {
    throw Error(strprintf("zip (%s kernels): the encoded chunks make no valid message: %s",
                          kernels_.backend, e.what()));
  }
  memory.upload(out, head_.data(), head_bytes);
  if (chunks > 0) {
    uint64_t* offsets = grown(offsets_, chunks + 1, memory);
    memory.upload(offsets, layout.offsets.data(), chunks * sizeof(uint64_t));
    kernels_.gather(slots_.data(), slot, sizes_.data(), offsets, chunks, out);
  }
  return bytes;
}

void DeviceZipCodec::decompress(const uint8_t* in, size_t bytes, void* out, size_t n, DType dtype) {
  GOSSAMER_CHECK(out != nullptr || n == 0, "zip: output is null but holds %zu elements", n);
  decode(in, bytes, n, dtype, kernels::ZipTarget::STORE, out);
}

void DeviceZipCodec::decompress_accumulate(const uint8_t* in, size_t bytes, float* acc, size_t n,
                                           DType dtype, bool assign) {
  GOSSAMER_CHECK(acc != nullptr || n == 0, "zip: accumulator is null but holds %zu elements", n);
  decode(in, bytes, n, dtype, assign ? kernels::ZipTarget::ASSIGN_F32 : kernels::ZipTarget::ADD_F32,
         acc);
}

void DeviceZipCodec::decode(const uint8_t* in, size_t bytes, size_t n, DType dtype,
                            kernels::ZipTarget target, void* out) {
  const bool bf16 = is_bf16(dtype);
  const MemoryOps& memory = *kernels_.memory;
  head_.assign(kMessageHeaderBytes, 0);
  const size_t header = bytes < kMessageHeaderBytes ? bytes : kMessageHeaderBytes;
  memory.download(head_.data(), in, header);
  head_.resize(header);
  const size_t head_bytes = message_head_bytes(head_, bytes);
  head_.resize(head_bytes);
  memory.download(head_.data(), in, head_bytes);
  const MessageLayout layout = parse_message_head(head_, bytes, n, dtype);
  if (layout.chunks == 0) return;
  uint64_t* offsets = grown(offsets_, layout.chunks + 1, memory);
  memory.upload(offsets, layout.offsets.data(), (layout.chunks + 1) * sizeof(uint64_t));
  uint32_t* status = grown(status_, layout.chunks, memory);
  host_status_.assign(layout.chunks, kNotDecoded);
  memory.upload(status, host_status_.data(), layout.chunks * 4);
  kernels_.decode(in, offsets, n, bf16, layout.chunk_elems, layout.checksum, tables_, target, out,
                  status);
  memory.download(host_status_.data(), status, layout.chunks * 4);
  for (size_t c = 0; c < layout.chunks; ++c)
    GOSSAMER_CHECK(host_status_[c] != kNotDecoded, "zip (%s kernels): chunk %zu of %zu not decoded",
                   kernels_.backend, c, layout.chunks);
  for (size_t c = 0; c < layout.chunks; ++c)
    if (host_status_[c] != uint32_t(ZipStatus::OK))
      throw CorruptInput(strprintf("zip: chunk %zu of %zu: %s", c, layout.chunks,
                                   host_status_[c] < kNumZipStatuses
                                       ? zip_status_message(ZipStatus(host_status_[c]))
                                       : "unknown status"));
}

}  // namespace gossamer::comm::zip
