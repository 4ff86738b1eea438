// Multi-rank tests of the mpi backend's own paths, run by ctest under mpirun with 2, 3 and 4
// ranks: a tiny chunk limit sends every operation through the split paths (several MPI calls
// per operation; all_to_all_v also where only some ranks' totals exceed it, and a short part
// named by its source), and a second communicator works alongside the first while an error stays
// in the communicator where it happened. Data, buffers and checks as in test_comm.cpp
// (comm_test_util.h); main() and the per-rank reporting are mpi_test_main.h.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/mpi_communicator.h"
#include "comm/mpi_transport_defaults.h"
#include "comm_test_util.h"
#include "core/error.h"
#include "mpi_test_main.h"

namespace gossamer::comm {
namespace {

using namespace test;

// ---- mpi backend only --------------------------------------------------------------------------

// Open MPI's TCP transport was told to send messages up to 2 MiB eagerly before MPI_Init (ctest's
// mpirun sets none of the three), and a user's own setting of any one keeps all three theirs.
TEST(MpiBackend, OpenMpiTcpEagerDefaults) {
#ifdef OPEN_MPI
  auto* mpi = dynamic_cast<MpiCommunicator*>(g_mpi);
  ASSERT_NE(mpi, nullptr);
  const char* names[] = {"OMPI_MCA_btl_tcp_eager_limit", "OMPI_MCA_btl_tcp_rndv_eager_limit",
                         "OMPI_MCA_btl_tcp_max_send_size"};
  for (const char* name : names) {
    const char* value = std::getenv(name);
    ASSERT_NE(value, nullptr) << name;
    EXPECT_STREQ(value, "2097152") << name;
  }
  EXPECT_NE(mpi->transport_defaults().find("2097152"), std::string::npos)
      << mpi->transport_defaults();
  // A user's value of one of them: nothing else is touched, and the log line names it.
  for (const char* name : names) unsetenv(name);
  setenv(names[1], "4096", 1);
  const std::string kept = apply_mpi_transport_defaults();
  EXPECT_NE(kept.find("btl_tcp_rndv_eager_limit=4096"), std::string::npos) << kept;
  EXPECT_EQ(std::getenv(names[0]), nullptr);
  EXPECT_EQ(std::getenv(names[2]), nullptr);
  for (const char* name : names) setenv(name, "2097152", 1);
#else
  GTEST_SKIP() << "not Open MPI: no transport defaults";
#endif
}

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

// all_to_all_v with a tiny chunk limit: every part split into pieces (MPI_Isend / MPI_Irecv of
// pieces matched in order); the "rank 0 small" matrix mixes ranks whose parts fit one piece with
// ranks whose parts do not.
TEST(MpiBackend, ChunkedAllToAll) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(g_mpi);
  ASSERT_NE(mpi, nullptr);
  Communicator& c = *g_mpi;
  const int world = c.size(), rank = c.rank();
  int salt = 650;
  for (size_t chunk : {size_t(64), size_t(8)}) {
    mpi->set_max_chunk_bytes(chunk);
    const auto patterns = all_to_all_patterns(world);
    for (size_t p = 0; p < patterns.size(); ++p)
      for (DType dtype : {DType::F32, DType::BF16, DType::U8, DType::I64}) {
        const std::vector<size_t>& m = patterns[p];
        if (sum(m) > 10000) continue;  // at 64 bytes per message, bigger ones only cost time
        ++salt;
        const size_t es = dtype_size(dtype);
        const std::vector<size_t> to = send_counts(m, world, rank),
                                  from = recv_counts(m, world, rank);
        const Bytes input = all_to_all_input(dtype, m, world, rank, salt);
        CommBuffer send(c, sum(to) * es), recv(c, sum(from) * es);
        send.upload(input);
        const CommStats before = c.stats();
        c.all_to_all_v(send.data(), to, recv.data(), from, dtype).wait();
        EXPECT_EQ(c.stats().since(before)[Kind::ALL_TO_ALL].calls, 1);
        EXPECT_EQ(
            count_wrong(recv.download(), all_to_all_output(dtype, m, world, rank, salt), dtype), 0u)
            << label(dtype, "chunked all_to_all_v", sum(m)) << ", pattern " << p << ", chunk "
            << chunk;
        EXPECT_EQ(count_wrong(send.download(), input, dtype), 0u);
        EXPECT_TRUE(send.guards_intact() && recv.guards_intact());
      }
  }
  mpi->set_max_chunk_bytes(size_t{1} << 30);
}

// all_to_all_v stays in flight while later operations start: 40 of them (more than the worker's
// limit, should they all stay in flight) issued without waiting, an all_reduce between every
// tenth, all awaited in reverse order; every part lands where its own operation put it (consecutive
// operations between one pair match in issue order).
TEST(MpiBackend, AllToAllInFlightWithLaterOperations) {
  Communicator& c = *g_mpi;
  const int world = c.size(), rank = c.rank();
  const auto patterns = all_to_all_patterns(world);
  constexpr int kOps = 40;
  std::vector<std::vector<size_t>> to(kOps), from(kOps);
  std::vector<Bytes> inputs(kOps);
  std::vector<std::unique_ptr<CommBuffer>> sends, recvs;
  std::vector<Work> works;
  std::vector<float> sums(size_t(kOps / 10));
  for (int k = 0; k < kOps; ++k) {
    const std::vector<size_t>& m = patterns[size_t(k) % patterns.size()];
    to[size_t(k)] = send_counts(m, world, rank);
    from[size_t(k)] = recv_counts(m, world, rank);
    inputs[size_t(k)] = all_to_all_input(DType::F32, m, world, rank, 900 + k);
    sends.push_back(std::make_unique<CommBuffer>(c, sum(to[size_t(k)]) * 4));
    recvs.push_back(std::make_unique<CommBuffer>(c, sum(from[size_t(k)]) * 4));
    sends.back()->upload(inputs[size_t(k)]);
    works.push_back(c.all_to_all_v(sends.back()->data(), to[size_t(k)], recvs.back()->data(),
                                   from[size_t(k)], DType::F32));
    if (k % 10 == 9) {
      sums[size_t(k / 10)] = float(rank + k);
      works.push_back(c.all_reduce(&sums[size_t(k / 10)], 1, DType::F32, ReduceOp::SUM));
    }
  }
  for (auto it = works.rbegin(); it != works.rend(); ++it) it->wait();
  for (int k = 0; k < kOps; ++k) {
    const std::vector<size_t>& m = patterns[size_t(k) % patterns.size()];
    EXPECT_EQ(count_wrong(recvs[size_t(k)]->download(),
                          all_to_all_output(DType::F32, m, world, rank, 900 + k), DType::F32),
              0u)
        << "all_to_all_v " << k << " of " << kOps << " in flight";
    EXPECT_TRUE(sends[size_t(k)]->guards_intact() && recvs[size_t(k)]->guards_intact());
  }
  for (int j = 0; j < kOps / 10; ++j)
    EXPECT_EQ(sums[size_t(j)], float(world * (world - 1) / 2 + world * (10 * j + 9)));
}

// On the split path a part shorter than the receiver expects is an error naming the source rank
// (rank 0 sends 5 elements to rank 1, which expects 10); only the receiving rank fails.
TEST(MpiBackend, AllToAllShortPartNamesTheSource) {
  auto second = std::make_unique<MpiCommunicator>();
  second->set_max_chunk_bytes(64);  // 16 fp32: every rank's totals exceed it
  Communicator& b = *second;
  const int world = b.size(), rank = b.rank();
  std::vector<size_t> to(size_t(world), 40), from(size_t(world), 40);
  to[size_t(rank)] = from[size_t(rank)] = 5;
  if (rank == 0) to[1] = 5;
  if (rank == 1) from[0] = 10;
  CommBuffer send(b, sum(to) * 4), recv(b, sum(from) * 4);
  b.set_context("step 7");
  Work w = b.all_to_all_v(send.data(), to, recv.data(), from, DType::F32);
  if (rank != 1) {
    w.wait();
  } else {
    try {
      w.wait();
      ADD_FAILURE() << "a short part was accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("rank 1: mpi all_to_all failed (step 7)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("expected 10 elements from rank 0, received 5"), std::string::npos) << msg;
    }
  }
  second.reset();
  g_mpi->barrier();
}

// sendrecv_upto around the ring with room for 5 elements: rank 0 sends 10 to rank 1, every
// other rank 3. Only rank 1 fails, with an error naming the source and the room.
TEST(MpiBackend, SendRecvUptoOverflowNamesTheSource) {
  auto second = std::make_unique<MpiCommunicator>();
  Communicator& b = *second;
  const int world = b.size(), rank = b.rank();
  const int dest = (rank + 1) % world, source = (rank + world - 1) % world;
  const size_t send_n = rank == 0 ? 10 : 3;
  CommBuffer send(b, 10 * 4), recv(b, 5 * 4);
  size_t received = 0;
  b.set_context("step 9");
  Work w =
      b.sendrecv_upto(send.data(), send_n, dest, recv.data(), 5, source, &received, DType::F32);
  if (rank != 1) {
    w.wait();
    EXPECT_EQ(received, 3u);  // only rank 1 receives from rank 0
  } else {
    try {
      w.wait();
      ADD_FAILURE() << "a message longer than the room was accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("rank 1: mpi sendrecv failed (step 9)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("sendrecv_upto): from rank 0 (at most 5 elements)"), std::string::npos)
          << msg;
    }
  }
  EXPECT_TRUE(recv.guards_intact());
  second.reset();
  g_mpi->barrier();
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

}  // namespace
}  // namespace gossamer::comm

int main(int argc, char** argv) {
  return gossamer::comm::test::run_all_ranks(argc, argv);
}
