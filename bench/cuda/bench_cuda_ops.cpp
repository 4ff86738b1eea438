// bench_cuda_ops: the per-op benchmark (bench/op_bench.h) on the CUDA op table at GPT-2 124M's
// training shapes (B = 16, T = 1024, C = 768, 12 heads, vocabulary 50257 padded to 50304): every
// op of the table next to its roofline (a 2 GiB device copy and an 8192^3 fp32 product measure
// the peaks in the same run), the op-sum estimate of one training step, and the zip codec's
// kernels (kernels/cuda/zip_chunks.cu) on 16M Gaussian values, bf16 and fp32, which are not ops
// of the table. `gossamer bench ops` runs the same rows on the CPU table. Without a GPU it prints
// SKIPPED and exits 0 (scripts/gpu-check.sh runs it).
// Usage: bench_cuda_ops [--quick]   (--quick: B = 2, for a first look)
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/op_bench.h"
#include "comm/zip/device_codec.h"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/ops_table.h"
#include "kernels/cuda/zip_chunks.cuh"

namespace {

namespace k = gossamer::kernels::cuda;
namespace zip = gossamer::comm::zip;
using gossamer::bench::OpBuffers;
using gossamer::bench::OpRow;

// The zip codec on 16M values (the buffers' Gaussian pool), in bf16 and fp32, chunks of 16,384:
// compress, and the decode-add a compressed reduce-scatter runs. Bytes: the raw values read and
// the message written (compress), the message read and the fp32 sums read and written.
std::vector<OpRow> zip_rows(OpBuffers& buf) {
  auto codec = std::make_shared<zip::DeviceZipCodec>(k::kZipChunks);
  const size_t n = size_t{1} << 24;
  float* values32 = buf.floats(n);
  auto* values16 = static_cast<uint16_t*>(buf.zeros(n * 2));
  buf.ops().to_bf16(values16, values32, n);
  float* acc = buf.floats(n);
  std::vector<OpRow> rows;
  for (const gossamer::comm::DType dtype :
       {gossamer::comm::DType::BF16, gossamer::comm::DType::F32}) {
    const void* values =
        dtype == gossamer::comm::DType::BF16 ? static_cast<const void*>(values16) : values32;
    const size_t cap = zip::max_compressed_bytes(n, dtype);
    auto* message = static_cast<uint8_t*>(buf.zeros(cap));
    const size_t bytes = codec->compress(values, n, dtype, message, cap);
    const double raw = double(n) * gossamer::comm::dtype_size(dtype);
    char shape[64];
    std::snprintf(shape, sizeof shape, "16M %s, ratio %.3f", gossamer::comm::dtype_name(dtype),
                  raw / double(bytes));
    rows.push_back(OpRow{"zip compress", "", shape, raw + double(bytes), 0, 0, false,
                         [=] { (void)codec->compress(values, n, dtype, message, cap); }});
    rows.push_back(
        OpRow{"zip decompress_accumulate", "", shape, double(bytes) + 8.0 * n, 0, 0, false,
              [=] { codec->decompress_accumulate(message, bytes, acc, n, dtype, false); }});
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (k::visible_gpus() == 0) {
    std::printf("bench_cuda_ops: SKIPPED (no GPU visible: cudaGetDeviceCount)\n");
    return 0;
  }
  try {
    k::use_device(0);
    gossamer::bench::OpShapes shapes;
    shapes.model.n_layer = 12, shapes.model.n_head = 12, shapes.model.d_model = 768;
    shapes.model.vocab_size = 50257, shapes.model.max_seq_len = 1024;
    shapes.model.validate();
    shapes.B = quick ? 2 : 16, shapes.T = 1024;
    OpBuffers buffers(k::ops());
    gossamer::bench::OpBenchOptions options;
    options.copy_bytes = size_t{2} << 30;
    options.matmul_n = 8192;
    return gossamer::bench::run_op_bench(shapes, buffers, zip_rows(buffers), options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_ops: %s\n", e.what());
    return 1;
  }
}
