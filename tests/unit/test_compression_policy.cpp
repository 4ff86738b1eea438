// Tests of the zip decorator's cost model and decision (src/comm/zip/compression_policy.h):
// the modes, the small-message bypass, the model's predictions against hand-computed values,
// the break-even ratio, and that a fast link (shared memory) never compresses.
#include <gtest/gtest.h>

#include "comm/zip/compression_policy.h"

namespace gossamer::comm::zip {
namespace {

PolicyInputs inputs(Kind kind, size_t bytes, double link, double codec, double ratio) {
  PolicyInputs in;
  in.mode = Compression::COMPRESSION_ADAPTIVE;
  in.kind = kind;
  in.bytes = bytes;
  in.world = 4;
  in.min_bytes = 1 << 18;
  in.link_gbps = link;
  in.codec_gbps = codec;
  in.ratio = ratio;
  return in;
}

TEST(CompressionPolicy, ModesAndBypass) {
  PolicyInputs in = inputs(Kind::ALL_REDUCE, 16 << 20, 0.125, 2.0, 1.45);
  in.mode = Compression::COMPRESSION_OFF;
  EXPECT_EQ(decide(in).path, Path::NATIVE);
  in.mode = Compression::COMPRESSION_PLAIN;
  EXPECT_EQ(decide(in).path, Path::PLAIN);
  in.mode = Compression::COMPRESSION_ON;
  EXPECT_EQ(decide(in).path, Path::COMPRESSED);
  in.bytes = 1000;  // below min_bytes: on sends it plain (the same bits as compressed)
  EXPECT_EQ(decide(in).path, Path::PLAIN);
  in.mode = Compression::COMPRESSION_ADAPTIVE;
  EXPECT_EQ(decide(in).path, Path::NATIVE);
  in.bytes = 16 << 20;
  in.world = 1;
  EXPECT_EQ(decide(in).path, Path::NATIVE);
}

TEST(CompressionPolicy, ModelMatchesHandComputedTimes) {
  // Reduce-scatter of M = 16 MB on 4 ranks: wire 12 MB, codec 24 MB.
  const Decision d = decide(inputs(Kind::REDUCE_SCATTER, 16000000, 0.125, 2.0, 1.5));
  EXPECT_DOUBLE_EQ(d.native_s, 12e6 / 0.125e9);
  EXPECT_DOUBLE_EQ(d.compressed_s, 12e6 / (1.5 * 0.125e9) + 24e6 / 2e9);
  EXPECT_EQ(d.path, Path::COMPRESSED);
  // All-gather: wire 12 MB, codec 4 + 12 MB; all-reduce: wire 24 MB, codec 36 + 4 MB.
  const Decision g = decide(inputs(Kind::ALL_GATHER, 16000000, 0.125, 2.0, 1.5));
  EXPECT_DOUBLE_EQ(g.compressed_s, 12e6 / (1.5 * 0.125e9) + 16e6 / 2e9);
  const Decision a = decide(inputs(Kind::ALL_REDUCE, 16000000, 0.125, 2.0, 1.5));
  EXPECT_DOUBLE_EQ(a.native_s, 24e6 / 0.125e9);
  EXPECT_DOUBLE_EQ(a.compressed_s, 24e6 / (1.5 * 0.125e9) + 40e6 / 2e9);
}

TEST(CompressionPolicy, BreakEvenRatioAndFastLinks) {
  // Reduce-scatter: compressed wins when 1/ratio + 2B/C < 1 - margin.
  const double link = 0.125, codec = 2.0;
  const double break_even = 1.0 / (1.0 - kAdaptiveMargin - 2 * link / codec);
  EXPECT_EQ(decide(inputs(Kind::REDUCE_SCATTER, 64 << 20, link, codec, break_even * 1.01)).path,
            Path::COMPRESSED);
  EXPECT_EQ(decide(inputs(Kind::REDUCE_SCATTER, 64 << 20, link, codec, break_even * 0.99)).path,
            Path::NATIVE);
  // Shared memory (several GB/s): never, whatever the ratio.
  EXPECT_EQ(decide(inputs(Kind::ALL_REDUCE, 64 << 20, 5.0, 2.0, 1.5)).path, Path::NATIVE);
  EXPECT_EQ(decide(inputs(Kind::ALL_GATHER, 64 << 20, 5.0, 2.0, 10.0)).path, Path::NATIVE);
  // Unknown speeds: native.
  EXPECT_EQ(decide(inputs(Kind::ALL_REDUCE, 64 << 20, 0.0, 2.0, 1.5)).path, Path::NATIVE);
}

}  // namespace
}  // namespace gossamer::comm::zip
