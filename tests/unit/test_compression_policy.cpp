// Tests of the zip decorator's cost model and decision (src/comm/zip/compression_policy.h):
// the modes, the small-message bypass, the model's predictions against hand-computed values,
// the break-even ratio, that a fast link (shared memory) never compresses, and that with
// parallel.sum_order = fixed adaptive falls back to the plain algorithm, never the backend's own.
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
  // Reduce-scatter of M = 16 MB on 4 ranks: wire 12 MB, codec 24 MB, part 4 MB, S = 1 MiB:
  // the wire bounds (12e6 / 1.5 B > 24e6 / C), plus one step encoded first and one decoded last.
  const double fill = 2.0 * (1 << 20) / 2e9;
  const Decision d = decide(inputs(Kind::REDUCE_SCATTER, 16000000, 0.125, 2.0, 1.5));
  EXPECT_DOUBLE_EQ(d.native_s, 12e6 / 0.125e9);
  EXPECT_DOUBLE_EQ(d.compressed_s, 12e6 / (1.5 * 0.125e9) + fill);
  EXPECT_EQ(d.path, Path::COMPRESSED);
  // All-gather: wire 12 MB, codec 4 + 12 MB; all-reduce: both phases.
  const Decision g = decide(inputs(Kind::ALL_GATHER, 16000000, 0.125, 2.0, 1.5));
  EXPECT_DOUBLE_EQ(g.compressed_s, 12e6 / (1.5 * 0.125e9) + fill);
  const Decision a = decide(inputs(Kind::ALL_REDUCE, 16000000, 0.125, 2.0, 1.5));
  EXPECT_DOUBLE_EQ(a.native_s, 24e6 / 0.125e9);
  EXPECT_DOUBLE_EQ(a.compressed_s, 2 * (12e6 / (1.5 * 0.125e9) + fill));
  // A slow codec bounds instead: reduce-scatter at C = 0.2 GB/s, 24e6 / C > 12e6 / (1.5 B).
  const Decision slow = decide(inputs(Kind::REDUCE_SCATTER, 16000000, 0.125, 0.2, 1.5));
  EXPECT_DOUBLE_EQ(slow.compressed_s, 24e6 / 0.2e9 + 2.0 * (1 << 20) / 0.2e9);
  EXPECT_EQ(slow.path, Path::NATIVE);
  // Parts smaller than a step: the fill is the part.
  const Decision tiny = decide(inputs(Kind::REDUCE_SCATTER, 2000000, 0.125, 2.0, 1.5));
  EXPECT_DOUBLE_EQ(tiny.compressed_s, 1.5e6 / (1.5 * 0.125e9) + 2.0 * 500000 / 2e9);
}

TEST(CompressionPolicy, BreakEvenRatioAndFastLinks) {
  // Reduce-scatter, wire-bound: compressed wins when 1/ratio + fill share < 1 - margin.
  const double link = 0.125, codec = 2.0;
  const double spread = 0.75 * double(64 << 20);
  const double fill_share = (2.0 * (1 << 20) / (codec * 1e9)) / (spread / (link * 1e9));
  const double break_even = 1.0 / (1.0 - kAdaptiveMargin - fill_share);
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

TEST(CompressionPolicy, FixedOrderFallsBackToPlain) {
  for (const bool fixed : {false, true}) {
    const Path fallback = fixed ? Path::PLAIN : Path::NATIVE;
    PolicyInputs fast = inputs(Kind::ALL_REDUCE, 64 << 20, 5.0, 2.0, 1.5);  // never pays
    PolicyInputs small = inputs(Kind::ALL_REDUCE, 1000, 0.125, 2.0, 1.5);   // below min_bytes
    PolicyInputs unknown = inputs(Kind::ALL_REDUCE, 64 << 20, 0.0, 2.0, 1.5);
    PolicyInputs pays = inputs(Kind::ALL_REDUCE, 64 << 20, 0.125, 2.0, 1.5);
    for (PolicyInputs* in : {&fast, &small, &unknown, &pays}) in->fixed_order = fixed;
    EXPECT_EQ(decide(fast).path, fallback);
    EXPECT_EQ(decide(small).path, fallback);
    EXPECT_EQ(decide(unknown).path, fallback);
    EXPECT_EQ(decide(pays).path, Path::COMPRESSED);
    pays.mode = Compression::COMPRESSION_OFF;  // off is decided by wrap_with_compression
    EXPECT_EQ(decide(pays).path, Path::NATIVE);
  }
}

TEST(CompressionPolicy, CanEverPayIsTheBestCaseOfDecide) {
  // The closed form against decide() with a huge message and ratio, around the threshold
  // C = B P/(P-1) / 0.95, for every kind (the all-gather is the first to pay).
  for (int world : {2, 3, 4, 8}) {
    const double link = 0.125, threshold = link * world / (world - 1.0) / (1 - kAdaptiveMargin);
    for (double codec : {threshold * 0.98, threshold * 1.02, threshold * 3}) {
      bool any = false;
      for (Kind kind : {Kind::ALL_REDUCE, Kind::REDUCE_SCATTER, Kind::ALL_GATHER}) {
        PolicyInputs in = inputs(kind, size_t{1} << 50, link, codec, 1e30);
        in.world = world;
        any = any || decide(in).path == Path::COMPRESSED;
      }
      EXPECT_EQ(compression_can_ever_pay(link, codec, world), any)
          << "world " << world << " codec " << codec;
      EXPECT_EQ(any, codec > threshold) << "world " << world << " codec " << codec;
    }
  }
  EXPECT_FALSE(compression_can_ever_pay(0.125, 2.0, 1));
  EXPECT_FALSE(compression_can_ever_pay(0.0, 2.0, 4));
  EXPECT_FALSE(compression_can_ever_pay(0.125, 0.0, 4));
}

}  // namespace
}  // namespace gossamer::comm::zip
