// `gossamer bench codec`: compression ratio and throughput of the lossless zip codec
// (src/comm/zip) next to zstd level 1 and LZ4 on the same bytes. Data sets: synthetic ones
// (Gaussian bf16 and fp32, bf16 with 90% and 99% exact zeros; fixed seeds) and, with
// --checkpoint, a checkpoint's real tensors (parameters, each optimizer state kind, and the
// gradient of one forward+backward on the next training batch; each as fp32 and as bf16). One
// markdown row per data set: ratio, the exponent-entropy bound and the share of it reached,
// encode/decode GB/s of uncompressed bytes at 1 thread and at --threads, the chunk modes used,
// and zstd-1 / LZ4 ratio and speed. Every round trip is checked bit for bit.
#pragma once

#include <cstddef>
#include <string>

namespace gossamer::bench {

struct CodecBenchOptions {
  size_t elements = size_t{16} << 20;  // per synthetic data set
  int iters = 5;                       // timed runs per measurement (the median is reported)
  int warmup = 1;                      // untimed runs first
  int threads = 0;                     // the multi-thread columns (0: OpenMP's max threads)
  size_t chunk_elems = 16384;          // the codec's chunk size
  bool checksum = true;                // the codec's per-chunk CRC-32C
  std::string checkpoint;              // checkpoint or run directory ("": synthetic data only)
};

// Returns the exit status: 0, or 1 when a round trip was not bit-exact.
int run_codec_bench(const CodecBenchOptions& options);

}  // namespace gossamer::bench
