// Multi-rank tests of the communicators, run by ctest under mpirun with 2, 3 and 4 ranks: every
// collective for every dtype and reduce op, awkward sizes (1, 7, 1023, 65537), unequal counts
// including zeros, in place and out of place, on data whose reduction is exact in any order, so
// each check is a count of wrong elements that must be 0; guard bands around every buffer catch
// out-of-bounds writes. Also: byte counters against the formulas of communicator.h, several
// operations in flight waited in reverse order, the mpi backend's chunked paths (> chunk limit),
// errors. Each test runs on the mpi backend and on the nccl backend (skipped without a GPU).
// Only rank 0 prints the gtest report; other ranks print their failures prefixed by the rank, and
// every rank exits non-zero when any rank failed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/bf16.h"
#include "comm/communicator.h"
#include "comm/mpi_communicator.h"
#include "core/error.h"
#include "core/log.h"
#ifdef GOSSAMER_HAVE_NCCL
#include "comm/nccl_device.h"
#endif

namespace gossamer::comm {
namespace {

Communicator* g_mpi = nullptr;
Communicator* g_nccl = nullptr;
std::string g_nccl_skip = "built without CUDA (GOSSAMER_CUDA=OFF)";  // why g_nccl is null

constexpr DType kDTypes[] = {DType::F32, DType::BF16, DType::I32, DType::I64, DType::U8};
constexpr ReduceOp kOps[] = {ReduceOp::SUM, ReduceOp::MAX, ReduceOp::MIN};
constexpr size_t kSizes[] = {1, 7, 1023, 65537};
constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;
constexpr uint8_t kJunkByte = 0xEE;

using Bytes = std::vector<uint8_t>;

// A payload of `bytes` on the communicator's side (host, or device for nccl) between two guard
// bands of kGuardByte.
class CommBuffer {
 public:
  CommBuffer(const Communicator& comm, size_t bytes, uint8_t fill = kJunkByte)
      : device_(comm.device_buffers()), bytes_(bytes) {
    if (bytes > (size_t{1} << 32)) throw Error("CommBuffer: test buffers stay below 4 GiB");
    Bytes init;
    init.insert(init.end(), kGuard, kGuardByte);
    init.insert(init.end(), bytes, fill);
    init.insert(init.end(), kGuard, kGuardByte);
    if (device_) {
#ifdef GOSSAMER_HAVE_NCCL
      base_ = device_alloc(init.size());
      copy_to_device(base_, init.data(), init.size());
#endif
    } else {
      host_ = std::move(init);
      base_ = host_.data();
    }
  }
  ~CommBuffer() {
#ifdef GOSSAMER_HAVE_NCCL
    if (device_) device_free(base_);
#endif
  }
  CommBuffer(const CommBuffer&) = delete;
  CommBuffer& operator=(const CommBuffer&) = delete;

  void* data() {
    return static_cast<char*>(base_) + kGuard;
  }
  void* at(size_t byte_offset) {
    return static_cast<char*>(data()) + byte_offset;
  }
  void upload(const Bytes& b, size_t byte_offset = 0) {
    copy_in(b.data(), b.size(), byte_offset);
  }
  Bytes download(size_t byte_offset = 0, size_t n = SIZE_MAX) const {
    n = std::min(n, bytes_ - byte_offset);
    Bytes all = whole();
    return Bytes(all.begin() + long(kGuard + byte_offset),
                 all.begin() + long(kGuard + byte_offset + n));
  }
  bool guards_intact() const {
    const Bytes all = whole();
    for (size_t i = 0; i < kGuard; ++i)
      if (all[i] != kGuardByte || all[kGuard + bytes_ + i] != kGuardByte) return false;
    return true;
  }

 private:
  void copy_in(const void* src, size_t n, size_t byte_offset) {
    char* dst = static_cast<char*>(data()) + byte_offset;
    if (!device_) {
      if (n) std::memcpy(dst, src, n);
      return;
    }
#ifdef GOSSAMER_HAVE_NCCL
    copy_to_device(dst, src, n);
#endif
  }
  Bytes whole() const {
    if (!device_) return host_;
    Bytes all(bytes_ + 2 * kGuard);
#ifdef GOSSAMER_HAVE_NCCL
    copy_to_host(all.data(), base_, all.size());
#endif
    return all;
  }

  bool device_;
  size_t bytes_;
  Bytes host_;
  void* base_ = nullptr;
};

// ---- exactly representable data ---------------------------------------------------------------

// A small integer for element i on rank r: unsigned in [0, m), signed in [-m/2, m/2), with
// m * world <= 256, so sums of all ranks are exact in bf16 and fit in uint8.
int64_t value(DType dtype, int world, int rank, size_t i, int salt) {
  const int64_t m = std::max<int64_t>(2, 256 / world);
  const int64_t v =
      int64_t((i * 131 + size_t(rank) * 71 + size_t(salt) * 17 + (i >> 3) * 7) % size_t(m));
  return dtype == DType::U8 ? v : v - m / 2;
}

void put(Bytes& b, DType dtype, size_t i, int64_t v) {
  const size_t es = dtype_size(dtype);
  if (b.size() < (i + 1) * es) b.resize((i + 1) * es);
  uint8_t* p = b.data() + i * es;
  switch (dtype) {
    case DType::F32: {
      const float f = float(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::BF16: {
      const uint16_t h = float_to_bf16(float(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::I32: {
      const int32_t x = int32_t(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case DType::I64:
      std::memcpy(p, &v, 8);
      return;
    case DType::U8:
      *p = uint8_t(v);
      return;
  }
}

// Element i of rank r's data.
Bytes rank_data(DType dtype, size_t n, int world, int rank, int salt, size_t first = 0) {
  Bytes b(n * dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) put(b, dtype, i, value(dtype, world, rank, first + i, salt));
  return b;
}

int64_t reduce(ReduceOp op, DType dtype, int world, size_t i, int salt) {
  int64_t acc = value(dtype, world, 0, i, salt);
  for (int r = 1; r < world; ++r) {
    const int64_t v = value(dtype, world, r, i, salt);
    acc = op == ReduceOp::SUM ? acc + v : op == ReduceOp::MAX ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

// Reduced elements [first, first + n).
Bytes reduced(ReduceOp op, DType dtype, size_t first, size_t n, int world, int salt) {
  Bytes b(n * dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) put(b, dtype, i, reduce(op, dtype, world, first + i, salt));
  return b;
}

size_t count_wrong(const Bytes& got, const Bytes& expected, DType dtype) {
  const size_t es = dtype_size(dtype);
  if (got.size() != expected.size()) return std::max(got.size(), expected.size()) / es;
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); i += es)
    wrong += std::memcmp(got.data() + i, expected.data() + i, es) != 0;
  return wrong;
}

std::string label(DType dtype, const char* what, size_t n) {
  return strprintf("%s %s n=%zu", dtype_name(dtype), what, n);
}

// Count vectors for reduce_scatter / all_gather: equal, unequal with zeros, one big part.
std::vector<std::vector<size_t>> count_patterns(int world) {
  std::vector<std::vector<size_t>> p(5, std::vector<size_t>(size_t(world)));
  for (int r = 0; r < world; ++r) {
    p[0][size_t(r)] = 7;
    p[1][size_t(r)] = 1023;
    p[2][size_t(r)] = r == 1 ? 0 : size_t(1 + 13 * r);
    p[3][size_t(r)] = r == 0 ? 65537 : (r % 2 ? 0 : 3);
    p[4][size_t(r)] = 0;
  }
  return p;
}

size_t sum(const std::vector<size_t>& c) {
  size_t s = 0;
  for (size_t x : c) s += x;
  return s;
}
size_t offset(const std::vector<size_t>& c, int rank) {
  size_t s = 0;
  for (int r = 0; r < rank; ++r) s += c[size_t(r)];
  return s;
}

// ---- fixture -----------------------------------------------------------------------------------

class CommTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    comm_ = GetParam() == "mpi" ? g_mpi : g_nccl;
    if (!comm_) GTEST_SKIP() << "SKIPPED: nccl backend not tested: " << g_nccl_skip;
    world_ = comm_->size();
    rank_ = comm_->rank();
  }
  Communicator& comm() { return *comm_; }

  // One reduce_scatter case; returns wrong elements (guard damage counts as wrong).
  size_t reduce_scatter_case(DType dtype, ReduceOp op, const std::vector<size_t>& counts,
                             bool in_place, int salt) {
    const size_t es = dtype_size(dtype), total = sum(counts), mine = counts[size_t(rank_)];
    const size_t off = offset(counts, rank_);
    const Bytes input = rank_data(dtype, total, world_, rank_, salt);
    CommBuffer in(comm(), total * es);
    in.upload(input);
    CommBuffer out(comm(), in_place ? 0 : mine * es);
    void* dst = in_place ? in.at(off * es) : out.data();
    comm().reduce_scatter(in.data(), dst, counts, dtype, op).wait();
    const Bytes got = in_place ? in.download(off * es, mine * es) : out.download();
    size_t wrong = count_wrong(got, reduced(op, dtype, off, mine, world_, salt), dtype);
    if (!in_place) wrong += count_wrong(in.download(), input, dtype);  // input untouched
    wrong += !in.guards_intact() + !out.guards_intact();
    return wrong;
  }

  size_t all_gather_case(DType dtype, const std::vector<size_t>& counts, bool in_place, int salt) {
    const size_t es = dtype_size(dtype), total = sum(counts), mine = counts[size_t(rank_)];
    const size_t off = offset(counts, rank_);
    // Rank r contributes elements [off_r, off_r + c_r) of its own data pattern.
    const Bytes part = rank_data(dtype, mine, world_, rank_, salt, off);
    CommBuffer out(comm(), total * es);
    CommBuffer in(comm(), in_place ? 0 : mine * es);
    const void* src = in_place ? out.at(off * es) : in.data();
    if (in_place)
      out.upload(part, off * es);
    else
      in.upload(part);
    comm().all_gather(src, out.data(), counts, dtype).wait();
    Bytes expected;
    for (int r = 0; r < world_; ++r) {
      const Bytes p = rank_data(dtype, counts[size_t(r)], world_, r, salt, offset(counts, r));
      expected.insert(expected.end(), p.begin(), p.end());
    }
    size_t wrong = count_wrong(out.download(), expected, dtype);
    if (!in_place) wrong += count_wrong(in.download(), part, dtype);
    wrong += !in.guards_intact() + !out.guards_intact();
    return wrong;
  }

  Communicator* comm_ = nullptr;
  int world_ = 1, rank_ = 0;
};

// ---- collectives -------------------------------------------------------------------------------

TEST_P(CommTest, AllReduceEveryDTypeAndOp) {
  int salt = 0;
  for (DType dtype : kDTypes)
    for (ReduceOp op : kOps)
      for (size_t n : kSizes) {
        ++salt;
        CommBuffer buf(comm(), n * dtype_size(dtype));
        buf.upload(rank_data(dtype, n, world_, rank_, salt));
        comm().all_reduce(buf.data(), n, dtype, op).wait();
        EXPECT_EQ(count_wrong(buf.download(), reduced(op, dtype, 0, n, world_, salt), dtype), 0u)
            << label(dtype, reduce_op_name(op), n);
        EXPECT_TRUE(buf.guards_intact()) << label(dtype, reduce_op_name(op), n);
      }
  comm().all_reduce(nullptr, 0, DType::F32, ReduceOp::SUM).wait();
}

// One inexact bf16 sum: 1 + 3/256 lies halfway between two bf16 values; the sum is computed
// in fp32 and rounded to nearest even (0x3f82), not truncated (0x3f81). Every other rank adds
// zeros, which keeps any reduction order down to that one rounding.
TEST_P(CommTest, Bf16SumRoundsToNearestEven) {
  if (world_ < 2) GTEST_SKIP() << "needs 2 ranks";
  const uint16_t mine = rank_ == 0   ? float_to_bf16(1.0f)
                        : rank_ == 1 ? float_to_bf16(3.0f / 256)
                                     : uint16_t(0);
  Bytes b(2 * 5);
  for (int i = 0; i < 5; ++i) std::memcpy(b.data() + 2 * i, &mine, 2);
  CommBuffer buf(comm(), b.size());
  buf.upload(b);
  comm().all_reduce(buf.data(), 5, DType::BF16, ReduceOp::SUM).wait();
  const Bytes got = buf.download();
  for (int i = 0; i < 5; ++i) {
    uint16_t h;
    std::memcpy(&h, got.data() + 2 * i, 2);
    EXPECT_EQ(h, 0x3f82) << "element " << i;
  }
}

TEST_P(CommTest, ReduceScatterUnequalCountsInAndOutOfPlace) {
  int salt = 100;
  for (const auto& counts : count_patterns(world_))
    for (DType dtype : kDTypes)
      for (ReduceOp op : kOps)
        for (bool in_place : {false, true}) {
          if (op != ReduceOp::SUM && counts[0] == 65537) continue;  // keep the run short
          const size_t wrong = reduce_scatter_case(dtype, op, counts, in_place, ++salt);
          EXPECT_EQ(wrong, 0u) << label(dtype, reduce_op_name(op), sum(counts))
                               << (in_place ? " in place" : " out of place") << ", my count "
                               << counts[size_t(rank_)];
        }
}

TEST_P(CommTest, AllGatherUnequalCountsInAndOutOfPlace) {
  int salt = 200;
  for (const auto& counts : count_patterns(world_))
    for (DType dtype : kDTypes)
      for (bool in_place : {false, true}) {
        const size_t wrong = all_gather_case(dtype, counts, in_place, ++salt);
        EXPECT_EQ(wrong, 0u) << label(dtype, "all_gather", sum(counts))
                             << (in_place ? " in place" : " out of place");
      }
}

TEST_P(CommTest, BroadcastFromEveryRoot) {
  int salt = 300;
  for (int root = 0; root < world_; ++root)
    for (DType dtype : kDTypes)
      for (size_t n : {size_t(1), size_t(1023), size_t(65537)}) {
        ++salt;
        CommBuffer buf(comm(), n * dtype_size(dtype));
        buf.upload(rank_data(dtype, n, world_, rank_, salt));
        comm().broadcast(buf.data(), n, dtype, root).wait();
        EXPECT_EQ(count_wrong(buf.download(), rank_data(dtype, n, world_, root, salt), dtype), 0u)
            << label(dtype, "broadcast", n) << " root " << root;
        EXPECT_TRUE(buf.guards_intact());
      }
}

TEST_P(CommTest, SendRecvRingWithUnequalSizes) {
  const int dest = (rank_ + 1) % world_, source = (rank_ + world_ - 1) % world_;
  int salt = 400;
  for (DType dtype : kDTypes)
    for (size_t base : {size_t(0), size_t(1), size_t(1023), size_t(65537)}) {
      ++salt;
      const size_t es = dtype_size(dtype);
      const size_t send_n = base + size_t(rank_), recv_n = base + size_t(source);
      CommBuffer send(comm(), send_n * es), recv(comm(), recv_n * es);
      send.upload(rank_data(dtype, send_n, world_, rank_, salt));
      comm().sendrecv(send.data(), send_n, dest, recv.data(), recv_n, source, dtype).wait();
      EXPECT_EQ(count_wrong(recv.download(), rank_data(dtype, recv_n, world_, source, salt), dtype),
                0u)
          << label(dtype, "sendrecv", recv_n);
      EXPECT_TRUE(recv.guards_intact());
    }
}

TEST_P(CommTest, SendRecvWithOneselfIsACopyOfNoBytes) {
  const CommStats before = comm().stats();
  CommBuffer send(comm(), 7 * 4), recv(comm(), 7 * 4);
  send.upload(rank_data(DType::I32, 7, world_, rank_, 1));
  comm().sendrecv(send.data(), 7, rank_, recv.data(), 7, rank_, DType::I32).wait();
  EXPECT_EQ(count_wrong(recv.download(), rank_data(DType::I32, 7, world_, rank_, 1), DType::I32),
            0u);
  const CommStats d = comm().stats().since(before);
  EXPECT_EQ(d[Kind::SENDRECV].calls, 1);
  EXPECT_EQ(d.bytes_sent() + d.bytes_received(), 0);
}

// Rank 0 sends to every other rank, which answers with its own data; sizes differ per rank.
TEST_P(CommTest, SendAndRecvStar) {
  const DType dtype = DType::BF16;
  const size_t es = dtype_size(dtype);
  if (rank_ == 0) {
    std::vector<std::unique_ptr<CommBuffer>> out, back;
    std::vector<Work> works;
    for (int k = 1; k < world_; ++k) {
      const size_t n = size_t(k) * 20000 + 1;
      out.push_back(std::make_unique<CommBuffer>(comm(), n * es));
      out.back()->upload(rank_data(dtype, n, world_, 0, k));
      works.push_back(comm().send(out.back()->data(), n, dtype, k));
    }
    for (int k = 1; k < world_; ++k) {
      const size_t n = size_t(k) * 3 + 2;
      back.push_back(std::make_unique<CommBuffer>(comm(), n * es));
      works.push_back(comm().recv(back.back()->data(), n, dtype, k));
    }
    for (Work& w : works) w.wait();
    for (int k = 1; k < world_; ++k) {
      const size_t n = size_t(k) * 3 + 2;
      EXPECT_EQ(
          count_wrong(back[size_t(k - 1)]->download(), rank_data(dtype, n, world_, k, 99), dtype),
          0u)
          << "reply of rank " << k;
    }
  } else {
    const size_t n = size_t(rank_) * 20000 + 1, m = size_t(rank_) * 3 + 2;
    CommBuffer in(comm(), n * es), reply(comm(), m * es);
    comm().recv(in.data(), n, dtype, 0).wait();
    EXPECT_EQ(count_wrong(in.download(), rank_data(dtype, n, world_, 0, rank_), dtype), 0u);
    reply.upload(rank_data(dtype, m, world_, rank_, 99));
    comm().send(reply.data(), m, dtype, 0).wait();
  }
}

// Several operations in flight, waited in reverse order.
TEST_P(CommTest, AsyncOperationsWaitedInReverseOrder) {
  const int salt = 500;
  const size_t n = 65537;
  std::vector<size_t> counts(static_cast<size_t>(world_));
  for (int r = 0; r < world_; ++r) counts[size_t(r)] = 1000 + size_t(r) * 17;
  const size_t total = sum(counts), mine = counts[size_t(rank_)], off = offset(counts, rank_);

  CommBuffer ar(comm(), n * 4), rs_in(comm(), total * 4), rs_out(comm(), mine * 4);
  CommBuffer ag_in(comm(), mine * 2), ag_out(comm(), total * 2), bc(comm(), n * 8);
  CommBuffer sr_send(comm(), n), sr_recv(comm(), n);
  ar.upload(rank_data(DType::F32, n, world_, rank_, salt));
  rs_in.upload(rank_data(DType::I32, total, world_, rank_, salt + 1));
  ag_in.upload(rank_data(DType::BF16, mine, world_, rank_, salt + 2, off));
  bc.upload(rank_data(DType::I64, n, world_, rank_, salt + 3));
  sr_send.upload(rank_data(DType::U8, n, world_, rank_, salt + 4));
  const int root = world_ - 1, dest = (rank_ + 1) % world_, source = (rank_ + world_ - 1) % world_;

  std::vector<Work> works;
  works.push_back(comm().all_reduce(ar.data(), n, DType::F32, ReduceOp::SUM));
  works.push_back(
      comm().reduce_scatter(rs_in.data(), rs_out.data(), counts, DType::I32, ReduceOp::MAX));
  works.push_back(comm().all_gather(ag_in.data(), ag_out.data(), counts, DType::BF16));
  works.push_back(comm().broadcast(bc.data(), n, DType::I64, root));
  works.push_back(comm().sendrecv(sr_send.data(), n, dest, sr_recv.data(), n, source, DType::U8));
  for (auto it = works.rbegin(); it != works.rend(); ++it) it->wait();
  for (Work& w : works) EXPECT_TRUE(w.done());

  EXPECT_EQ(count_wrong(ar.download(), reduced(ReduceOp::SUM, DType::F32, 0, n, world_, salt),
                        DType::F32),
            0u);
  EXPECT_EQ(
      count_wrong(rs_out.download(),
                  reduced(ReduceOp::MAX, DType::I32, off, mine, world_, salt + 1), DType::I32),
      0u);
  Bytes gathered;
  for (int r = 0; r < world_; ++r) {
    const Bytes p =
        rank_data(DType::BF16, counts[size_t(r)], world_, r, salt + 2, offset(counts, r));
    gathered.insert(gathered.end(), p.begin(), p.end());
  }
  EXPECT_EQ(count_wrong(ag_out.download(), gathered, DType::BF16), 0u);
  EXPECT_EQ(
      count_wrong(bc.download(), rank_data(DType::I64, n, world_, root, salt + 3), DType::I64), 0u);
  EXPECT_EQ(
      count_wrong(sr_recv.download(), rank_data(DType::U8, n, world_, source, salt + 4), DType::U8),
      0u);
}

// The counters follow the formulas of communicator.h, written out here independently.
TEST_P(CommTest, ByteCountersFollowTheFormulas) {
  const int64_t N = world_, r = rank_;
  std::vector<size_t> counts(static_cast<size_t>(world_));
  for (int k = 0; k < world_; ++k) counts[size_t(k)] = k == 1 ? 0 : size_t(10 + 3 * k);
  const int64_t total = int64_t(sum(counts)), mine = int64_t(counts[size_t(rank_)]);
  const size_t n = 1001;
  CommBuffer a(comm(), n * 8), b(comm(), n * 8), c(comm(), n * 8);
  const int root = 1 % world_, dest = (rank_ + 1) % world_, source = (rank_ + world_ - 1) % world_;

  const CommStats before = comm().stats();
  comm().all_reduce(a.data(), n, DType::F32, ReduceOp::SUM).wait();
  comm().all_reduce(a.data(), n, DType::BF16, ReduceOp::MAX).wait();
  comm().reduce_scatter(a.data(), b.data(), counts, DType::I64, ReduceOp::SUM).wait();
  comm().all_gather(b.data(), c.data(), counts, DType::I32).wait();
  comm().broadcast(a.data(), n, DType::U8, root).wait();
  comm().sendrecv(a.data(), 5, dest, b.data(), 5, source, DType::I64).wait();
  comm().barrier();
  comm().barrier();
  const CommStats d = comm().stats().since(before);

  EXPECT_EQ(d[Kind::ALL_REDUCE].calls, 2);
  EXPECT_EQ(d[Kind::ALL_REDUCE].bytes_sent, 2 * (N - 1) * 4004 / N + 2 * (N - 1) * 2002 / N);
  EXPECT_EQ(d[Kind::ALL_REDUCE].bytes_received, d[Kind::ALL_REDUCE].bytes_sent);
  EXPECT_EQ(d[Kind::REDUCE_SCATTER].calls, 1);
  EXPECT_EQ(d[Kind::REDUCE_SCATTER].bytes_sent, (total - mine) * 8);
  EXPECT_EQ(d[Kind::REDUCE_SCATTER].bytes_received, (N - 1) * mine * 8);
  EXPECT_EQ(d[Kind::ALL_GATHER].calls, 1);
  EXPECT_EQ(d[Kind::ALL_GATHER].bytes_sent, (N - 1) * mine * 4);
  EXPECT_EQ(d[Kind::ALL_GATHER].bytes_received, (total - mine) * 4);
  EXPECT_EQ(d[Kind::BROADCAST].calls, 1);
  EXPECT_EQ(d[Kind::BROADCAST].bytes_received, r == root ? 0 : int64_t(n));
  EXPECT_EQ(d[Kind::BROADCAST].bytes_sent, r == (root + N - 1) % N ? 0 : int64_t(n));
  EXPECT_EQ(d[Kind::SENDRECV].calls, 1);
  EXPECT_EQ(d[Kind::SENDRECV].bytes_sent, 40);
  EXPECT_EQ(d[Kind::SENDRECV].bytes_received, 40);
  EXPECT_EQ(d[Kind::BARRIER].calls, 2);
  EXPECT_EQ(d[Kind::BARRIER].bytes_sent + d[Kind::BARRIER].bytes_received, 0);
  EXPECT_EQ(d[Kind::SEND].calls + d[Kind::RECV].calls, 0);
  EXPECT_GT(d[Kind::ALL_REDUCE].seconds_waited, 0.0);
  EXPECT_GE(d[Kind::BARRIER].seconds_waited, 0.0);
  EXPECT_EQ(d.bytes_sent(), d[Kind::ALL_REDUCE].bytes_sent + d[Kind::REDUCE_SCATTER].bytes_sent +
                                d[Kind::ALL_GATHER].bytes_sent + d[Kind::BROADCAST].bytes_sent +
                                d[Kind::SENDRECV].bytes_sent);
}

TEST_P(CommTest, BadArgumentsThrowBeforeAnythingIsSent) {
  const CommStats before = comm().stats();
  CommBuffer buf(comm(), 64);
  std::vector<size_t> wrong_size(size_t(world_) + 1, 1);
  EXPECT_THROW(comm().all_gather(buf.data(), buf.data(), wrong_size, DType::U8), Error);
  EXPECT_THROW(comm().reduce_scatter(buf.data(), buf.data(), wrong_size, DType::U8, ReduceOp::SUM),
               Error);
  EXPECT_THROW(comm().broadcast(buf.data(), 4, DType::U8, world_), Error);
  EXPECT_THROW(comm().send(buf.data(), 4, DType::U8, rank_), Error);
  EXPECT_THROW(comm().recv(buf.data(), 4, DType::U8, -1), Error);
  EXPECT_THROW(comm().sendrecv(buf.data(), 8, rank_, buf.at(4), 8, rank_, DType::U8), Error);
  EXPECT_THROW(comm().all_reduce(nullptr, 3, DType::F32, ReduceOp::SUM), Error);
  const CommStats d = comm().stats().since(before);
  EXPECT_EQ(d.bytes_sent(), 0);
  for (const KindStats& k : d.kinds) EXPECT_EQ(k.calls, 0);
  comm().barrier();  // the ranks still agree
}

TEST_P(CommTest, IdentityAndBarrier) {
  EXPECT_EQ(comm().backend(), GetParam());
  EXPECT_EQ(comm().device_buffers(), GetParam() == "nccl");
  EXPECT_GE(comm().local_rank(), 0);
  EXPECT_LE(comm().local_rank(), comm().rank());  // all ranks on one node here
  int32_t r = rank_;
  CommBuffer buf(comm(), 4);
  Bytes b(4);
  std::memcpy(b.data(), &r, 4);
  buf.upload(b);
  for (int i = 0; i < 3; ++i) comm().barrier();
  comm().all_reduce(buf.data(), 1, DType::I32, ReduceOp::MAX).wait();
  std::memcpy(&r, buf.download().data(), 4);
  EXPECT_EQ(r, world_ - 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, CommTest, ::testing::Values("mpi", "nccl"),
                         [](const auto& info) { return info.param; });

// ---- mpi backend only --------------------------------------------------------------------------

// A tiny chunk limit sends every operation through the split paths (several MPI calls per
// operation; reduce_scatter / all_gather via rooted MPI_Reduce / MPI_Bcast per part).
TEST(MpiBackend, ChunkedOperations) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(g_mpi);
  ASSERT_NE(mpi, nullptr);
  Communicator& c = *g_mpi;
  const int world = c.size(), rank = c.rank();
  mpi->set_max_chunk_bytes(64);
  int salt = 600;
  for (DType dtype : {DType::F32, DType::BF16, DType::I64}) {
    const size_t es = dtype_size(dtype), n = 1023;
    {
      CommBuffer buf(c, n * es);
      buf.upload(rank_data(dtype, n, world, rank, ++salt));
      c.all_reduce(buf.data(), n, dtype, ReduceOp::SUM).wait();
      EXPECT_EQ(
          count_wrong(buf.download(), reduced(ReduceOp::SUM, dtype, 0, n, world, salt), dtype), 0u)
          << label(dtype, "chunked all_reduce", n);
    }
    {
      CommBuffer buf(c, n * es);
      buf.upload(rank_data(dtype, n, world, rank, ++salt));
      c.broadcast(buf.data(), n, dtype, world - 1).wait();
      EXPECT_EQ(count_wrong(buf.download(), rank_data(dtype, n, world, world - 1, salt), dtype), 0u)
          << label(dtype, "chunked broadcast", n);
    }
    // Fixture-free versions of the reduce_scatter / all_gather cases (the patterns up to a few
    // thousand elements: at 64 bytes per call, bigger ones only cost time).
    for (const auto& counts : count_patterns(world))
      for (bool in_place : {false, true}) {
        if (sum(counts) > 10000) continue;
        ++salt;
        const size_t total = sum(counts), mine = counts[size_t(rank)], off = offset(counts, rank);
        const Bytes input = rank_data(dtype, total, world, rank, salt);
        CommBuffer in(c, total * es), out(c, mine * es);
        in.upload(input);
        c.reduce_scatter(in.data(), in_place ? in.at(off * es) : out.data(), counts, dtype,
                         ReduceOp::MIN)
            .wait();
        const Bytes got = in_place ? in.download(off * es, mine * es) : out.download();
        EXPECT_EQ(count_wrong(got, reduced(ReduceOp::MIN, dtype, off, mine, world, salt), dtype),
                  0u)
            << label(dtype, "chunked reduce_scatter", total) << (in_place ? " in place" : "");
        EXPECT_TRUE(in.guards_intact() && out.guards_intact());

        CommBuffer gathered(c, total * es), part(c, mine * es);
        const Bytes mine_data = rank_data(dtype, mine, world, rank, salt, off);
        if (in_place)
          gathered.upload(mine_data, off * es);
        else
          part.upload(mine_data);
        c.all_gather(in_place ? gathered.at(off * es) : part.data(), gathered.data(), counts, dtype)
            .wait();
        Bytes expected;
        for (int r = 0; r < world; ++r) {
          const Bytes p = rank_data(dtype, counts[size_t(r)], world, r, salt, offset(counts, r));
          expected.insert(expected.end(), p.begin(), p.end());
        }
        EXPECT_EQ(count_wrong(gathered.download(), expected, dtype), 0u)
            << label(dtype, "chunked all_gather", total) << (in_place ? " in place" : "");
        EXPECT_TRUE(gathered.guards_intact());
      }
    {
      const int dest = (rank + 1) % world, source = (rank + world - 1) % world;
      const size_t send_n = 100 + size_t(rank) * 37, recv_n = 100 + size_t(source) * 37;
      CommBuffer s(c, send_n * es), r(c, recv_n * es);
      s.upload(rank_data(dtype, send_n, world, rank, ++salt));
      c.sendrecv(s.data(), send_n, dest, r.data(), recv_n, source, dtype).wait();
      EXPECT_EQ(count_wrong(r.download(), rank_data(dtype, recv_n, world, source, salt), dtype), 0u)
          << label(dtype, "chunked sendrecv", recv_n);
      // Even ranks send first, odd ranks receive first: no cycle of blocking sends.
      CommBuffer p(c, n * es), q(c, n * es);
      p.upload(rank_data(dtype, n, world, rank, ++salt));
      if (world % 2 == 0) {
        const int peer = rank ^ 1;
        if (rank % 2 == 0) {
          c.send(p.data(), n, dtype, peer).wait();
          c.recv(q.data(), n, dtype, peer).wait();
        } else {
          c.recv(q.data(), n, dtype, peer).wait();
          c.send(p.data(), n, dtype, peer).wait();
        }
        EXPECT_EQ(count_wrong(q.download(), rank_data(dtype, n, world, peer, salt), dtype), 0u)
            << label(dtype, "chunked send/recv", n);
      }
    }
  }
  mpi->set_max_chunk_bytes(size_t{1} << 30);
}

// A second communicator works alongside the first; an error stays in the communicator where it
// happened and fails that communicator's later operations without running them.
TEST(MpiBackend, SecondCommunicatorAndErrorPropagation) {
  auto second = std::make_unique<MpiCommunicator>();
  Communicator& a = *g_mpi;
  Communicator& b = *second;
  ASSERT_EQ(b.size(), a.size());
  ASSERT_EQ(b.rank(), a.rank());
  const int world = a.size(), rank = a.rank();
  CommBuffer x(a, 4096 * 4), y(b, 4096 * 4);
  x.upload(rank_data(DType::F32, 4096, world, rank, 1));
  y.upload(rank_data(DType::F32, 4096, world, rank, 2));
  Work wa = a.all_reduce(x.data(), 4096, DType::F32, ReduceOp::SUM);
  Work wb = b.all_reduce(y.data(), 4096, DType::F32, ReduceOp::SUM);
  wb.wait();
  wa.wait();
  EXPECT_EQ(
      count_wrong(x.download(), reduced(ReduceOp::SUM, DType::F32, 0, 4096, world, 1), DType::F32),
      0u);
  EXPECT_EQ(
      count_wrong(y.download(), reduced(ReduceOp::SUM, DType::F32, 0, 4096, world, 2), DType::F32),
      0u);

  // Rank 1 expects 10 elements from rank 0, which sends 5.
  b.set_context("step 3");
  if (rank == 0) {
    b.send(y.data(), 5, DType::F32, 1).wait();
  } else if (rank == 1) {
    Work w = b.recv(y.data(), 10, DType::F32, 0);
    try {
      w.wait();
      ADD_FAILURE() << "a short message was accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("rank 1: mpi recv failed (step 3)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("expected 10 elements from rank 0, received 5"), std::string::npos) << msg;
    }
    Work later = b.all_reduce(y.data(), 1, DType::F32, ReduceOp::SUM);
    try {
      later.wait();
      ADD_FAILURE() << "an operation after a failure ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not run: an earlier operation failed"),
                std::string::npos)
          << e.what();
    }
  }
  second.reset();
  a.barrier();  // the first communicator is unaffected
}

// ---- reporting ---------------------------------------------------------------------------------

// On ranks other than 0: print only failures, each prefixed by the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // (UnitTest::current_test_info() would take the lock gtest holds while reporting a result.)
  void OnTestStart(const ::testing::TestInfo& t) override {
    test_ = std::string(t.test_suite_name()) + "." + t.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stdout, "[rank %d] FAILED %s at %s:%d\n%s\n", rank_, test_.c_str(),
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
    std::fflush(stdout);
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace
}  // namespace gossamer::comm

int main(int argc, char** argv) {
  using namespace gossamer::comm;
  ::testing::InitGoogleTest(&argc, argv);
  auto mpi = make_communicator("mpi", BufferLocation::BUFFER_LOCATION_HOST);
  mpi->set_timeout(60);  // a desynchronised test aborts the job instead of hanging it
  gossamer::log_set_rank(mpi->rank());
  g_mpi = mpi.get();
  std::unique_ptr<Communicator> nccl;
#ifdef GOSSAMER_HAVE_NCCL
  // One GPU per rank of a node, on every node, or no nccl tests (all ranks decide alike).
  int32_t enough = cuda_device_count() > mpi->local_rank();
  mpi->all_reduce(&enough, 1, DType::I32, ReduceOp::MIN).wait();
  if (enough) {
    nccl = make_communicator("nccl", BufferLocation::BUFFER_LOCATION_DEVICE);
    nccl->set_timeout(60);
    g_nccl = nccl.get();
  } else {
    g_nccl_skip = cuda_device_count() == 0
                      ? "no GPU is visible (cudaGetDeviceCount)"
                      : "fewer visible GPUs than ranks on a node (one GPU per rank needed)";
  }
#endif
  if (mpi->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(mpi->rank()));
  }
  const int rc = RUN_ALL_TESTS();
  // Every rank learns whether any rank failed, so every rank's exit status reports it.
  int32_t failed = rc != 0;
  mpi->all_reduce(&failed, 1, DType::I32, ReduceOp::MAX).wait();
  if (mpi->rank() == 0)
    std::printf("%d ranks: %s\n", mpi->size(),
                failed ? "FAILED (see the [rank R] lines for other ranks)" : "all ranks passed");
  g_nccl = g_mpi = nullptr;
  nccl.reset();
  mpi.reset();
  return failed ? 1 : 0;
}
