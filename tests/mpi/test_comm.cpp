// Multi-rank tests of the communicators, run by ctest under mpirun with 2, 3 and 4 ranks: every
// collective for every dtype and reduce op, awkward sizes (1, 7, 1023, 65537), unequal counts
// including zeros, in place and out of place, on data whose reduction is exact in any order, so
// each check is a count of wrong elements that must be 0; guard bands around every buffer catch
// out-of-bounds writes (comm_test_util.h). all_to_all_v for every dtype and count matrix (zeros,
// all zero, one big sender). Also: byte counters against the formulas of communicator.h, several
// operations in flight waited in reverse order, errors. Each test runs on the mpi backend and on
// the nccl backend (skipped without a GPU); the mpi backend's own paths are test_comm_mpi.cpp.
// main() and the per-rank reporting are mpi_test_main.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm_test_util.h"
#include "core/bf16.h"
#include "core/error.h"
#include "mpi_test_main.h"

namespace gossamer::comm {
namespace {

using namespace test;

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

  // One all_to_all_v case under count matrix m (comm_test_util.h); returns wrong elements of
  // the received parts and of the send buffer (which must be untouched), guard damage included.
  size_t all_to_all_case(DType dtype, const std::vector<size_t>& m, int salt) {
    const size_t es = dtype_size(dtype);
    const std::vector<size_t> to = send_counts(m, world_, rank_),
                              from = recv_counts(m, world_, rank_);
    const Bytes input = all_to_all_input(dtype, m, world_, rank_, salt);
    CommBuffer send(comm(), sum(to) * es), recv(comm(), sum(from) * es);
    send.upload(input);
    comm().all_to_all_v(send.data(), to, recv.data(), from, dtype).wait();
    size_t wrong =
        count_wrong(recv.download(), all_to_all_output(dtype, m, world_, rank_, salt), dtype);
    wrong += count_wrong(send.download(), input, dtype);
    wrong += !send.guards_intact() + !recv.guards_intact();
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

// sendrecv_upto around the ring, every case in flight at once and waited in reverse order:
// rank r sends base + r elements, each receiver posts room for more than any rank sends; what
// arrived is counted, lands at the start, leaves the rest of the room untouched, and the stats
// count the bytes that arrived. nccl refuses it (its receives need the sender's count).
TEST_P(CommTest, SendRecvUptoRingInFlight) {
  const int dest = (rank_ + 1) % world_, source = (rank_ + world_ - 1) % world_;
  if (GetParam() == "nccl") {
    CommBuffer a(comm(), 8), b(comm(), 8);
    size_t got = 0;
    EXPECT_THROW(comm().sendrecv_upto(a.data(), 1, dest, b.data(), 2, source, &got, DType::F32),
                 Error);
    return;
  }
  struct Case {
    DType dtype = DType::F32;
    size_t send_n = 0, room = 0, recv_n = 0;
    int salt = 0;
    std::unique_ptr<CommBuffer> send, recv;
    size_t received = ~size_t{0};
    Work work;
  };
  std::vector<Case> cases;
  int salt = 700;
  for (DType dtype : kDTypes)
    for (size_t base : {size_t(0), size_t(1), size_t(1023), size_t(65537)}) {
      Case c;
      c.dtype = dtype, c.send_n = base + size_t(rank_), c.room = base + size_t(world_) + 3;
      c.recv_n = base + size_t(source), c.salt = ++salt;
      cases.push_back(std::move(c));
    }
  const CommStats before = comm().stats();
  int64_t sent = 0, received = 0;
  for (Case& c : cases) {
    const size_t es = dtype_size(c.dtype);
    c.send = std::make_unique<CommBuffer>(comm(), c.send_n * es);
    c.recv = std::make_unique<CommBuffer>(comm(), c.room * es);
    c.send->upload(rank_data(c.dtype, c.send_n, world_, rank_, c.salt));
    c.recv->upload(Bytes(c.room * es, 0xA5));
    c.work = comm().sendrecv_upto(c.send->data(), c.send_n, dest, c.recv->data(), c.room, source,
                                  &c.received, c.dtype);
    sent += int64_t(c.send_n * es), received += int64_t(c.recv_n * es);
  }
  for (auto it = cases.rbegin(); it != cases.rend(); ++it) it->work.wait();
  for (const Case& c : cases) {
    const size_t es = dtype_size(c.dtype);
    ASSERT_EQ(c.received, c.recv_n) << label(c.dtype, "sendrecv_upto", c.recv_n);
    const Bytes got = c.recv->download();
    EXPECT_EQ(count_wrong(Bytes(got.begin(), got.begin() + std::ptrdiff_t(c.recv_n * es)),
                          rank_data(c.dtype, c.recv_n, world_, source, c.salt), c.dtype),
              0u)
        << label(c.dtype, "sendrecv_upto", c.recv_n);
    EXPECT_TRUE(std::all_of(got.begin() + std::ptrdiff_t(c.recv_n * es), got.end(), [](uint8_t b) {
      return b == 0xA5;
    })) << label(c.dtype, "sendrecv_upto: room past what arrived", c.recv_n);
    EXPECT_TRUE(c.send->guards_intact() && c.recv->guards_intact());
  }
  const CommStats d = comm().stats().since(before);
  EXPECT_EQ(d[Kind::SENDRECV].calls, int64_t(cases.size()));
  EXPECT_EQ(d[Kind::SENDRECV].bytes_sent, world_ > 1 ? sent : 0);
  EXPECT_EQ(d[Kind::SENDRECV].bytes_received, world_ > 1 ? received : 0);
}

// A neighbour exchange: this rank's buffer to ranks r+1 and r+2, one buffer from r-1 and r-2 (one
// peer each way at 2 ranks), counted as one call of the summed bytes.
TEST_P(CommTest, SendRecvManyToEveryNeighbour) {
  std::vector<int> dests, sources;
  for (int offset : {1, 2}) {
    const int d = (rank_ + offset) % world_, s = (rank_ + world_ - offset % world_) % world_;
    if (d == rank_ || std::find(dests.begin(), dests.end(), d) != dests.end()) continue;
    dests.push_back(d);
    sources.push_back(s);
  }
  for (DType dtype : kDTypes)
    for (size_t n : {size_t(1), size_t(1023), size_t(65537)}) {
      const size_t es = dtype_size(dtype);
      CommBuffer send(comm(), n * es);
      std::vector<std::unique_ptr<CommBuffer>> recv;
      std::vector<void*> into;
      for (size_t k = 0; k < sources.size(); ++k) {
        recv.push_back(std::make_unique<CommBuffer>(comm(), n * es));
        into.push_back(recv.back()->data());
      }
      send.upload(rank_data(dtype, n, world_, rank_, 77));
      const CommStats before = comm().stats();
      comm().sendrecv_many(send.data(), n, dests, into, sources, dtype).wait();
      const CommStats d = comm().stats().since(before);
      EXPECT_EQ(d[Kind::SENDRECV].calls, 1);
      EXPECT_EQ(d[Kind::SENDRECV].bytes_sent, int64_t(dests.size() * n * es));
      EXPECT_EQ(d[Kind::SENDRECV].bytes_received, int64_t(sources.size() * n * es));
      for (size_t k = 0; k < sources.size(); ++k) {
        EXPECT_EQ(
            count_wrong(recv[k]->download(), rank_data(dtype, n, world_, sources[k], 77), dtype),
            0u)
            << label(dtype, "sendrecv_many", n) << " from rank " << sources[k];
        EXPECT_TRUE(recv[k]->guards_intact());
      }
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

// Every count matrix (unequal with zeros, all zero, none for oneself, equal, one big sender, one
// small rank) for every dtype; fp32, bf16 and uint8 data are small integers, exact in each.
TEST_P(CommTest, AllToAllVEveryDTypeAndCountPattern) {
  int salt = 700;
  const auto patterns = all_to_all_patterns(world_);
  for (size_t p = 0; p < patterns.size(); ++p)
    for (DType dtype : kDTypes) {
      const size_t wrong = all_to_all_case(dtype, patterns[p], ++salt);
      EXPECT_EQ(wrong, 0u) << label(dtype, "all_to_all_v", sum(patterns[p])) << ", pattern " << p;
    }
}

// One call per all_to_all_v; bytes as the formula of communicator.h, written out here: sent =
// what this rank's row sends to other ranks, received = what its column receives from them.
TEST_P(CommTest, AllToAllVCountsOneCallAndTheFormulaBytes) {
  const auto patterns = all_to_all_patterns(world_);
  for (size_t p : {size_t(0), size_t(2), size_t(4)})
    for (DType dtype : {DType::F32, DType::BF16, DType::U8}) {
      const std::vector<size_t>& m = patterns[p];
      const int64_t es = int64_t(dtype_size(dtype));
      int64_t sent = 0, received = 0;
      for (int r = 0; r < world_; ++r) {
        if (r == rank_) continue;
        sent += int64_t(m[size_t(rank_ * world_ + r)]) * es;
        received += int64_t(m[size_t(r * world_ + rank_)]) * es;
      }
      const CommStats before = comm().stats();
      EXPECT_EQ(all_to_all_case(dtype, m, 800 + int(p)), 0u);
      const CommStats d = comm().stats().since(before);
      EXPECT_EQ(d[Kind::ALL_TO_ALL].calls, 1) << "pattern " << p;
      EXPECT_EQ(d[Kind::ALL_TO_ALL].bytes_sent, sent) << "pattern " << p;
      EXPECT_EQ(d[Kind::ALL_TO_ALL].bytes_received, received) << "pattern " << p;
      EXPECT_EQ(d.bytes_sent(), sent);
      EXPECT_EQ(d.bytes_received(), received);
      for (int k = 0; k < kNumKinds; ++k)
        if (Kind(k) != Kind::ALL_TO_ALL) {
          EXPECT_EQ(d.kinds[size_t(k)].calls, 0) << kind_name(Kind(k));
        }
    }
}

// Two all_to_all_v around an all_reduce, all in flight, waited in reverse order.
TEST_P(CommTest, AllToAllVInFlightWithOtherOperations) {
  const auto patterns = all_to_all_patterns(world_);
  const std::vector<size_t>& a = patterns[0];
  const std::vector<size_t>& b = patterns[4];
  const size_t n = 4099;
  CommBuffer a_send(comm(), sum(send_counts(a, world_, rank_)) * 4);
  CommBuffer a_recv(comm(), sum(recv_counts(a, world_, rank_)) * 4);
  CommBuffer b_send(comm(), sum(send_counts(b, world_, rank_)) * 2);
  CommBuffer b_recv(comm(), sum(recv_counts(b, world_, rank_)) * 2);
  CommBuffer ar(comm(), n * 4);
  a_send.upload(all_to_all_input(DType::F32, a, world_, rank_, 901));
  b_send.upload(all_to_all_input(DType::BF16, b, world_, rank_, 902));
  ar.upload(rank_data(DType::I32, n, world_, rank_, 903));
  std::vector<Work> works;
  works.push_back(comm().all_to_all_v(a_send.data(), send_counts(a, world_, rank_), a_recv.data(),
                                      recv_counts(a, world_, rank_), DType::F32));
  works.push_back(comm().all_reduce(ar.data(), n, DType::I32, ReduceOp::SUM));
  works.push_back(comm().all_to_all_v(b_send.data(), send_counts(b, world_, rank_), b_recv.data(),
                                      recv_counts(b, world_, rank_), DType::BF16));
  for (auto it = works.rbegin(); it != works.rend(); ++it) it->wait();
  EXPECT_EQ(count_wrong(a_recv.download(), all_to_all_output(DType::F32, a, world_, rank_, 901),
                        DType::F32),
            0u);
  EXPECT_EQ(count_wrong(b_recv.download(), all_to_all_output(DType::BF16, b, world_, rank_, 902),
                        DType::BF16),
            0u);
  EXPECT_EQ(
      count_wrong(ar.download(), reduced(ReduceOp::SUM, DType::I32, 0, n, world_, 903), DType::I32),
      0u);
  EXPECT_TRUE(a_recv.guards_intact() && b_recv.guards_intact());
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
  // all_to_all_v: counts not one per rank, send and recv overlapping, a null buffer holding
  // elements, a part for oneself of different sizes each way.
  const std::vector<size_t> ones(size_t(world_), 1), twos(size_t(world_), 2);
  std::vector<size_t> uneven = ones;
  uneven[size_t(rank_)] = 2;
  EXPECT_THROW(comm().all_to_all_v(buf.data(), wrong_size, buf.at(32), ones, DType::U8), Error);
  EXPECT_THROW(comm().all_to_all_v(buf.data(), ones, buf.at(32), wrong_size, DType::U8), Error);
  EXPECT_THROW(comm().all_to_all_v(buf.data(), twos, buf.at(1), twos, DType::U8), Error);
  EXPECT_THROW(comm().all_to_all_v(buf.at(1), twos, buf.data(), twos, DType::U8), Error);
  EXPECT_THROW(comm().all_to_all_v(nullptr, ones, buf.at(32), ones, DType::U8), Error);
  EXPECT_THROW(comm().all_to_all_v(buf.data(), ones, nullptr, ones, DType::U8), Error);
  EXPECT_THROW(comm().all_to_all_v(buf.data(), uneven, buf.at(32), ones, DType::U8), Error);
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

}  // namespace
}  // namespace gossamer::comm

int main(int argc, char** argv) {
  return gossamer::comm::test::run_all_ranks(argc, argv);
}
