// Multi-rank tests of the zip decorator (src/comm/zip/zip_communicator.h) over the mpi backend,
// run by ctest under mpirun with 2, 3 and 4 ranks: sum reduce-scatter, all-gather and
// all-reduce of bf16 and fp32 on exactly representable data (unequal and zero counts, in place
// and not, many pipeline segments and codec chunks) give the exact sums on the plain and the
// compressed path; on inexact (Gaussian) data the two paths agree bit for bit; the accounting
// (compressed calls, wire and raw bytes); small messages bypass; adaptive decisions are the
// same on every rank; other operations pass through.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "comm/byte_accounting.h"
#include "comm/zip/zip_communicator.h"
#include "core/bf16.h"
#include "mpi_test_main.h"

namespace gossamer::comm::zip {
namespace {

using test::g_mpi;

std::unique_ptr<ZipCommunicator> make_zip(Compression mode, ZipOptions options = {}) {
  options.mode = mode;
  if (options.segment_bytes == (size_t{1} << 20)) options.segment_bytes = 1000;  // many steps
  if (options.plain_segment_bytes == (size_t{512} << 10)) options.plain_segment_bytes = 600;
  if (options.codec.chunk_elems == kDefaultChunkElems) options.codec.chunk_elems = 128;
  auto zip = std::make_unique<ZipCommunicator>(
      make_communicator("mpi", BufferLocation::BUFFER_LOCATION_HOST), options);
  zip->set_timeout(60);
  return zip;
}

// Element i of rank r: a small integer times a power of two, so sums over 4 ranks are exact in
// bf16 and fp32.
double exact_value(size_t i, int r, int salt) {
  const int k = int((i * 7 + size_t(r) * 3 + size_t(salt)) % 9) - 4;
  return std::ldexp(double(k), int(i % 11) - 5);
}

std::vector<uint8_t> encode_values(const std::vector<double>& v, DType dtype) {
  std::vector<uint8_t> b(v.size() * dtype_size(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::F32) {
      const float f = float(v[i]);
      std::memcpy(b.data() + 4 * i, &f, 4);
    } else {
      const uint16_t h = float_to_bf16(float(v[i]));
      std::memcpy(b.data() + 2 * i, &h, 2);
    }
  }
  return b;
}

std::vector<uint8_t> exact_input(size_t n, int rank, int salt, DType dtype) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = exact_value(i, rank, salt);
  return encode_values(v, dtype);
}

std::vector<uint8_t> exact_sum(size_t first, size_t n, int world, int salt, DType dtype) {
  std::vector<double> v(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (int r = 0; r < world; ++r) v[i] += exact_value(first + i, r, salt);
  return encode_values(v, dtype);
}

std::vector<uint8_t> gaussian_input(size_t n, int rank, int salt, DType dtype) {
  std::mt19937 rng(uint32_t(rank * 1000 + salt));
  std::normal_distribution<double> normal(0.0, 0.01);
  std::vector<double> v(n);
  for (auto& x : v) x = normal(rng);
  return encode_values(v, dtype);
}

size_t count_wrong(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, DType dtype) {
  const size_t es = dtype_size(dtype);
  size_t wrong = 0;
  for (size_t i = 0; i + es <= std::min(a.size(), b.size()); i += es)
    wrong += std::memcmp(a.data() + i, b.data() + i, es) != 0;
  return wrong + (a.size() != b.size() ? 1 : 0);
}

std::vector<std::vector<size_t>> patterns(int world) {
  std::vector<std::vector<size_t>> p;
  p.push_back(std::vector<size_t>(size_t(world), 1500));
  std::vector<size_t> uneven(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) uneven[size_t(r)] = r == 1 ? 0 : size_t(700 + 450 * r);
  p.push_back(uneven);
  p.push_back(std::vector<size_t>(size_t(world), 0));
  std::vector<size_t> one(static_cast<size_t>(world), 0);
  one[0] = 3;
  p.push_back(one);
  return p;
}

size_t offset_of(const std::vector<size_t>& c, int rank) {
  size_t o = 0;
  for (int r = 0; r < rank; ++r) o += c[size_t(r)];
  return o;
}

size_t total_of(const std::vector<size_t>& c) {
  return offset_of(c, int(c.size()));
}

// Reduce-scatter of `input` (whole message) on zip; returns this rank's part.
std::vector<uint8_t> run_reduce_scatter(ZipCommunicator& zip, std::vector<uint8_t> input,
                                        const std::vector<size_t>& counts, DType dtype,
                                        bool in_place) {
  const size_t es = dtype_size(dtype), mine = counts[size_t(zip.rank())];
  const size_t off = offset_of(counts, zip.rank());
  if (in_place) {
    zip.reduce_scatter(input.data(), input.data() + off * es, counts, dtype, ReduceOp::SUM).wait();
    return std::vector<uint8_t>(input.begin() + long(off * es),
                                input.begin() + long((off + mine) * es));
  }
  std::vector<uint8_t> out(mine * es + 1);
  zip.reduce_scatter(input.data(), out.data(), counts, dtype, ReduceOp::SUM).wait();
  out.pop_back();
  return out;
}

TEST(ZipComm, ExactSumsOnBothPaths) {
  const int world = g_mpi->size(), rank = g_mpi->rank();
  int salt = 0;
  for (Compression mode : {Compression::COMPRESSION_PLAIN, Compression::COMPRESSION_ON}) {
    ZipOptions options;
    options.min_bytes = 0;
    auto zip = make_zip(mode, options);
    for (DType dtype : {DType::BF16, DType::F32}) {
      const size_t es = dtype_size(dtype);
      for (const auto& counts : patterns(world)) {
        const size_t total = total_of(counts), off = offset_of(counts, rank);
        const size_t mine = counts[size_t(rank)];
        for (bool in_place : {false, true}) {
          ++salt;
          SCOPED_TRACE(testing::Message() << enum_name(mode) << " " << dtype_name(dtype)
                                          << " total " << total << " in_place " << in_place);
          EXPECT_EQ(count_wrong(run_reduce_scatter(*zip, exact_input(total, rank, salt, dtype),
                                                   counts, dtype, in_place),
                                exact_sum(off, mine, world, salt, dtype), dtype),
                    0u)
              << "reduce_scatter";
          // all_gather: every rank's part is its exact_input at its offset.
          std::vector<uint8_t> expected(total * es);
          for (int r = 0; r < world; ++r) {
            const std::vector<uint8_t> part = exact_input(total, r, salt, dtype);
            const size_t o = offset_of(counts, r);
            std::memcpy(expected.data() + o * es, part.data() + o * es, counts[size_t(r)] * es);
          }
          const std::vector<uint8_t> mine_in = exact_input(total, rank, salt, dtype);
          std::vector<uint8_t> out(total * es, 0xee);
          if (in_place) {
            std::memcpy(out.data() + off * es, mine_in.data() + off * es, mine * es);
            zip->all_gather(out.data() + off * es, out.data(), counts, dtype).wait();
          } else {
            zip->all_gather(mine_in.data() + off * es, out.data(), counts, dtype).wait();
          }
          EXPECT_EQ(count_wrong(out, expected, dtype), 0u) << "all_gather";
          std::vector<uint8_t> buf = exact_input(total, rank, salt, dtype);
          zip->all_reduce(buf.data(), total, dtype, ReduceOp::SUM).wait();
          EXPECT_EQ(count_wrong(buf, exact_sum(0, total, world, salt, dtype), dtype), 0u)
              << "all_reduce";
        }
      }
    }
  }
}

TEST(ZipComm, CompressedPathMatchesPlainBitForBit) {
  const int world = g_mpi->size(), rank = g_mpi->rank();
  ZipOptions options;
  options.min_bytes = 0;
  auto plain = make_zip(Compression::COMPRESSION_PLAIN, options);
  auto on = make_zip(Compression::COMPRESSION_ON, options);
  int salt = 100;
  for (DType dtype : {DType::BF16, DType::F32}) {
    for (const auto& counts : patterns(world)) {
      ++salt;
      const size_t total = total_of(counts);
      const std::vector<uint8_t> input = gaussian_input(total, rank, salt, dtype);
      EXPECT_EQ(count_wrong(run_reduce_scatter(*plain, input, counts, dtype, false),
                            run_reduce_scatter(*on, input, counts, dtype, false), dtype),
                0u)
          << dtype_name(dtype) << " reduce_scatter " << total;
      std::vector<uint8_t> a = input, b = input;
      plain->all_reduce(a.data(), total, dtype, ReduceOp::SUM).wait();
      on->all_reduce(b.data(), total, dtype, ReduceOp::SUM).wait();
      EXPECT_EQ(count_wrong(a, b, dtype), 0u) << dtype_name(dtype) << " all_reduce " << total;
      // ... and the result is the same on every rank.
      std::vector<uint8_t> first = b;
      g_mpi->broadcast(first.data(), first.size(), DType::U8, 0).wait();
      EXPECT_EQ(count_wrong(first, b, dtype), 0u);
    }
  }
}

TEST(ZipComm, CountsCompressedCallsAndBytes) {
  const int world = g_mpi->size(), rank = g_mpi->rank();
  ZipOptions options;
  options.min_bytes = 4096;
  auto on = make_zip(Compression::COMPRESSION_ON, options);
  const size_t n = 20000;  // 40 kB of bf16: compressed
  std::vector<uint8_t> buf = gaussian_input(n, rank, 7, DType::BF16);
  on->all_reduce(buf.data(), n, DType::BF16, ReduceOp::SUM).wait();
  std::vector<uint8_t> small = gaussian_input(1000, rank, 8, DType::BF16);  // 2 kB: bypassed
  on->all_reduce(small.data(), 1000, DType::BF16, ReduceOp::SUM).wait();
  const KindStats& k = on->stats()[Kind::ALL_REDUCE];
  EXPECT_EQ(k.calls, 2);
  EXPECT_EQ(k.compressed_calls, 1);
  const ByteCount big = all_reduce_bytes(n, DType::BF16, world),
                  little = all_reduce_bytes(1000, DType::BF16, world);
  EXPECT_EQ(k.raw_bytes_sent, big.sent + little.sent);
  EXPECT_LT(k.bytes_sent, k.raw_bytes_sent);  // compressed on the wire
  EXPECT_GT(double(k.raw_bytes_sent) / double(k.bytes_sent), 1.2);
  auto plain = make_zip(Compression::COMPRESSION_PLAIN, options);
  plain->all_reduce(buf.data(), n, DType::BF16, ReduceOp::SUM).wait();
  const KindStats& p = plain->stats()[Kind::ALL_REDUCE];
  EXPECT_EQ(p.compressed_calls, 0);
  EXPECT_EQ(p.bytes_sent, big.sent);
  EXPECT_EQ(p.raw_bytes_sent, big.sent);
}

// The decisions of this rank, hashed, equal on every rank.
void expect_same_decisions_everywhere(const ZipCommunicator& zip) {
  std::string all;
  for (const std::string& d : zip.decisions()) all += d + "\n";
  int64_t mine = int64_t(std::hash<std::string>{}(all)&0x7fffffffffffffff);
  std::vector<int64_t> every(size_t(g_mpi->size()));
  const std::vector<size_t> ones(size_t(g_mpi->size()), 1);
  g_mpi->all_gather(&mine, every.data(), ones, DType::I64).wait();
  for (int64_t h : every) EXPECT_EQ(h, mine) << all;
}

TEST(ZipComm, AdaptiveDecisionsAreTheSameOnEveryRank) {
  const int rank = g_mpi->rank();
  for (double link : {0.05, 0.0}) {  // configured slow link; measured (shared memory: fast)
    ZipOptions options;
    options.min_bytes = 1 << 14;
    options.link_gbps = link;
    options.codec_gbps = link > 0 ? 2.0 : 0.0;  // configured, or measured and agreed
    auto zip = make_zip(Compression::COMPRESSION_ADAPTIVE, options);
    for (size_t n : {size_t(1000), size_t(200000), size_t(60000)}) {
      std::vector<uint8_t> buf = gaussian_input(n, rank, 3, DType::BF16);
      zip->all_reduce(buf.data(), n, DType::BF16, ReduceOp::SUM).wait();
      const std::vector<size_t> counts(size_t(g_mpi->size()), n / 4);
      std::vector<uint8_t> out(counts[0] * 2 * counts.size());
      zip->all_gather(buf.data(), out.data(), counts, DType::BF16).wait();
    }
    const std::vector<std::string> d = zip->decisions();
    ASSERT_FALSE(d.empty());
    EXPECT_NE(d[0].find("-> native"), std::string::npos) << d[0];  // 2 kB: under min_bytes
    if (link > 0) {  // 400 kB on 50 MB/s: compression pays
      bool found = false;
      for (const std::string& line : d)
        found = found || line.rfind("all_reduce bf16 400000 B -> compressed", 0) == 0;
      EXPECT_TRUE(found);
      EXPECT_GT(zip->stats()[Kind::ALL_REDUCE].compressed_calls, 0);
    }
    expect_same_decisions_everywhere(*zip);
  }
}

// Adaptive steps aside when the codec cannot beat the link at any ratio (shared memory): the
// agreed speeds decide, identically on every rank, and the wrapped backend comes back whole.
TEST(ZipComm, AdaptiveStepsAsideWhenCompressionCannotPay) {
  struct Case {
    double link, codec;
    bool never;
  };
  // codec/wire is at least P/(P-1) (all-gather): link >= codec never pays; a slow link may.
  for (const Case& c : {Case{2.0, 1.0, true}, Case{1.0, 1.0, true}, Case{0.125, 1.0, false},
                        Case{0.4, 1.0, false}}) {
    ZipOptions options;
    options.link_gbps = c.link;
    options.codec_gbps = c.codec;
    auto zip = make_zip(Compression::COMPRESSION_ADAPTIVE, options);
    EXPECT_EQ(zip->compression_never_pays(), c.never) << "link " << c.link << " codec " << c.codec;
    int mine = zip->compression_never_pays() ? 1 : 0, all = mine;
    g_mpi->all_reduce(&all, 1, DType::I32, ReduceOp::SUM).wait();
    EXPECT_EQ(all, mine * g_mpi->size());
  }
  ZipOptions fast;
  fast.link_gbps = 5.0;
  fast.codec_gbps = 1.0;
  auto zip = make_zip(Compression::COMPRESSION_ON, fast);
  EXPECT_FALSE(zip->compression_never_pays());  // only adaptive steps aside
  fast.mode = Compression::COMPRESSION_ADAPTIVE;
  std::unique_ptr<Communicator> back =
      wrap_with_compression(make_communicator("mpi", BufferLocation::BUFFER_LOCATION_HOST), fast);
  EXPECT_EQ(dynamic_cast<ZipCommunicator*>(back.get()), nullptr);
  EXPECT_STREQ(back->backend(), "mpi");
  int one = 1;
  back->all_reduce(&one, 1, DType::I32, ReduceOp::SUM).wait();
  EXPECT_EQ(one, g_mpi->size());
}

TEST(ZipComm, OtherOperationsPassThrough) {
  const int world = g_mpi->size(), rank = g_mpi->rank();
  auto zip = make_zip(Compression::COMPRESSION_ON);
  std::vector<float> v(100, float(rank + 1));
  zip->all_reduce(v.data(), v.size(), DType::F32, ReduceOp::MAX).wait();
  EXPECT_EQ(v[7], float(world));
  std::vector<int32_t> ints(50, rank + 1);
  zip->all_reduce(ints.data(), ints.size(), DType::I32, ReduceOp::SUM).wait();
  EXPECT_EQ(ints[3], world * (world + 1) / 2);
  std::vector<int64_t> b(10, rank == world - 1 ? 42 : 0);
  zip->broadcast(b.data(), b.size(), DType::I64, world - 1).wait();
  EXPECT_EQ(b[9], 42);
  int32_t to = rank, from = -1;
  zip->sendrecv(&to, 1, (rank + 1) % world, &from, 1, (rank + world - 1) % world, DType::I32)
      .wait();
  EXPECT_EQ(from, (rank + world - 1) % world);
  // sendrecv_upto: rank r sends r + 1 elements into a room of world + 1; the bytes that arrived
  // counted.
  const int source = (rank + world - 1) % world;
  std::vector<int32_t> mine(size_t(rank + 1), rank), room(size_t(world) + 1, -1);
  size_t received = 0;
  const int64_t before = zip->stats()[Kind::SENDRECV].bytes_received;
  zip->sendrecv_upto(mine.data(), mine.size(), (rank + 1) % world, room.data(), room.size(), source,
                     &received, DType::I32)
      .wait();
  EXPECT_EQ(received, size_t(source + 1));
  EXPECT_EQ(room[size_t(source)], source);
  EXPECT_EQ(room[size_t(source + 1)], -1);
  EXPECT_EQ(zip->stats()[Kind::SENDRECV].bytes_received - before, int64_t(4 * (source + 1)));
  zip->barrier();
  EXPECT_EQ(zip->stats()[Kind::ALL_REDUCE].calls, 2);
  EXPECT_EQ(zip->stats()[Kind::ALL_REDUCE].compressed_calls, 0);
  EXPECT_EQ(zip->stats()[Kind::BROADCAST].calls, 1);
}

}  // namespace
}  // namespace gossamer::comm::zip

int main(int argc, char** argv) {
  return gossamer::comm::test::run_all_ranks(argc, argv);
}
