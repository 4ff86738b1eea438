// The in-process backend (comm/inprocess_communicator.h) at 1-8 ranks, each rank a thread: every
// operation on exactly representable data (wrong elements counted), the fixed summation order on
// values where order matters (against a fold written here, and against the zip decorator's plain
// path over the same ranks, so parallel.sum_order = fixed wraps nothing), uneven and zero counts,
// the in-place forms, completion in issue order when a later Work is waited on first, the
// analytic byte counts, and a rank that issued another collective named on both sides.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "comm/inprocess_communicator.h"
#include "comm/zip/zip_communicator.h"
#include "core/bf16.h"
#include "core/rng.h"

namespace {

using gossamer::comm::Communicator;
using gossamer::comm::DType;
using gossamer::comm::Kind;
using gossamer::comm::ReduceOp;

// Runs f(comm) on every rank, each in its own thread; returns each rank's error text ("" if none)
// and its count of wrong elements.
struct RankResult {
  std::string error;
  size_t wrong = 0;
};
std::vector<RankResult> run_ranks(int P, const std::function<size_t(Communicator&)>& f,
                                  std::vector<std::unique_ptr<Communicator>> comms = {}) {
  if (comms.empty()) comms = gossamer::comm::make_inprocess_communicators(P);
  std::vector<RankResult> out(size_t(P), RankResult{});
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r)
    threads.emplace_back([&, r] {
      try {
        out[size_t(r)].wrong = f(*comms[size_t(r)]);
      } catch (const std::exception& e) {
        out[size_t(r)].error = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

void expect_all_right(const std::vector<RankResult>& v, const std::string& what) {
  for (size_t r = 0; r < v.size(); ++r) {
    EXPECT_EQ(v[r].error, "") << what << ", rank " << r;
    EXPECT_EQ(v[r].wrong, 0u) << what << ", rank " << r << ": wrong elements";
  }
}

// Exactly representable: small multiples of 1/16, so any summation order gives the same bits.
float exact(int r, size_t i) {
  return float((r + 1) * int(i % 13) - 7) / 16.0f;
}

const int kWorlds[] = {1, 2, 3, 4, 5, 8};

TEST(InProcessComm, AllReduceExact) {
  for (int P : kWorlds)
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
      auto res = run_ranks(P, [&](Communicator& c) {
        std::vector<float> sum(n), max(n);
        std::vector<int32_t> isum(n);
        for (size_t i = 0; i < n; ++i)
          sum[i] = max[i] = exact(c.rank(), i), isum[i] = int32_t(c.rank() * 1000 + i);
        auto a = c.all_reduce(sum.data(), n, DType::F32, ReduceOp::SUM);
        auto b = c.all_reduce(max.data(), n, DType::F32, ReduceOp::MAX);
        auto d = c.all_reduce(isum.data(), n, DType::I32, ReduceOp::SUM);
        a.wait(), b.wait(), d.wait();
        size_t wrong = 0;
        for (size_t i = 0; i < n; ++i) {
          float s = 0, m = -1e30f;
          int32_t is = 0;
          for (int r = 0; r < P; ++r)
            s += exact(r, i), m = std::max(m, exact(r, i)), is += int32_t(r * 1000 + i);
          wrong += sum[i] != s, wrong += max[i] != m, wrong += isum[i] != is;
        }
        return wrong;
      });
      expect_all_right(res, "all_reduce P=" + std::to_string(P) + " n=" + std::to_string(n));
    }
}

// The owner of part p sums its own value first, then ranks p-1, p-2, ...; parts are the
// near-equal split (the first n % P parts one longer). Values where the order changes the bits.
float rough(int r, size_t i) {
  gossamer::Rng rng(uint64_t(r) * 1000003 + i);
  return float(rng.normal() * std::pow(10.0, double(int(i % 7)) - 3));
}

TEST(InProcessComm, SumsInTheFixedOrder) {
  for (int P : kWorlds) {
    const size_t n = 1001;
    std::vector<float> want(n);
    std::vector<uint16_t> want16(n);
    size_t at = 0;
    for (int p = 0; p < P; ++p) {
      const size_t len = n / P + (size_t(p) < n % P ? 1 : 0);
      for (size_t i = at; i < at + len; ++i) {
        float acc = rough(p, i),
              acc16 = gossamer::bf16_to_float(gossamer::float_to_bf16(rough(p, i)));
        for (int j = 1; j < P; ++j) {
          const int from = (p - j + P) % P;
          acc += rough(from, i);
          acc16 += gossamer::bf16_to_float(gossamer::float_to_bf16(rough(from, i)));
        }
        want[i] = acc, want16[i] = gossamer::float_to_bf16(acc16);
      }
      at += len;
    }
    auto res = run_ranks(P, [&](Communicator& c) {
      std::vector<float> x(n);
      std::vector<uint16_t> x16(n);
      for (size_t i = 0; i < n; ++i)
        x[i] = rough(c.rank(), i), x16[i] = gossamer::float_to_bf16(x[i]);
      c.all_reduce(x.data(), n, DType::F32, ReduceOp::SUM).wait();
      c.all_reduce(x16.data(), n, DType::BF16, ReduceOp::SUM).wait();
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i)
        wrong += std::memcmp(&x[i], &want[i], 4) != 0, wrong += x16[i] != want16[i];
      return wrong;
    });
    expect_all_right(res, "fixed order P=" + std::to_string(P));
  }
}

// The zip decorator's plain all-reduce and reduce-scatter over the same ranks give the same bits.
TEST(InProcessComm, SameBitsAsTheZipDecoratorsPlainPath) {
  for (int P : {2, 3, 4, 5}) {
    const size_t n = 70001;
    std::vector<std::vector<float>> direct(static_cast<size_t>(P));
    auto res = run_ranks(P, [&](Communicator& c) {
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) x[i] = rough(c.rank(), i);
      c.all_reduce(x.data(), n, DType::F32, ReduceOp::SUM).wait();
      direct[size_t(c.rank())] = x;
      return size_t{0};
    });
    expect_all_right(res, "direct");
    auto inner = gossamer::comm::make_inprocess_communicators(P);
    std::vector<std::unique_ptr<Communicator>> zipped(static_cast<size_t>(P));
    gossamer::comm::zip::ZipOptions options;
    options.mode = gossamer::comm::zip::Compression::COMPRESSION_PLAIN;
    options.plain_segment_bytes = 4096;  // several pipeline steps per round
    res = run_ranks(
        P,
        [&](Communicator& c) {
          const int r = c.rank();
          zipped[size_t(r)] = std::make_unique<gossamer::comm::zip::ZipCommunicator>(
              std::move(inner[size_t(r)]), options);
          std::vector<float> x(n);
          for (size_t i = 0; i < n; ++i) x[i] = rough(r, i);
          zipped[size_t(r)]->all_reduce(x.data(), n, DType::F32, ReduceOp::SUM).wait();
          size_t wrong = 0;
          for (size_t i = 0; i < n; ++i) wrong += std::memcmp(&x[i], &direct[size_t(r)][i], 4) != 0;
          zipped[size_t(r)].reset();  // its worker thread ends here, on its rank's thread
          return wrong;
        },
        gossamer::comm::make_inprocess_communicators(P));
    expect_all_right(res, "zip plain vs direct, P=" + std::to_string(P));
  }
}

// parallel.sum_order = fixed needs no decorator over this backend: its own sums are the order.
TEST(InProcessComm, FixedSumOrderNeedsNoDecorator) {
  auto comms = gossamer::comm::make_inprocess_communicators(3);
  EXPECT_TRUE(comms[0]->sums_in_fixed_order());
  gossamer::comm::zip::ZipOptions options;
  options.mode = gossamer::comm::zip::Compression::COMPRESSION_OFF;
  options.fixed_order = true;
  Communicator* before = comms[0].get();
  auto wrapped = gossamer::comm::zip::wrap_with_compression(std::move(comms[0]), options);
  EXPECT_EQ(wrapped.get(), before);
}

TEST(InProcessComm, ReduceScatterAndAllGatherUnevenInPlace) {
  for (int P : kWorlds) {
    std::vector<size_t> counts(static_cast<size_t>(P));
    for (int r = 0; r < P; ++r) counts[size_t(r)] = size_t((r * 5 + 3) % 4);  // zeros included
    size_t total = 0;
    for (size_t c : counts) total += c;
    auto res = run_ranks(P, [&](Communicator& c) {
      const int r = c.rank();
      size_t at = 0;
      for (int q = 0; q < r; ++q) at += counts[size_t(q)];
      const size_t mine = counts[size_t(r)];
      std::vector<float> in(total), out(mine + 1, -1.0f), inplace(total);
      for (size_t i = 0; i < total; ++i) in[i] = inplace[i] = exact(r, i);
      c.reduce_scatter(in.data(), out.data(), counts, DType::F32, ReduceOp::SUM).wait();
      c.reduce_scatter(inplace.data(), inplace.data() + at, counts, DType::F32, ReduceOp::SUM)
          .wait();
      size_t wrong = out[mine] != -1.0f;  // nothing written past this rank's part
      for (size_t i = 0; i < mine; ++i) {
        float s = 0;
        for (int q = 0; q < P; ++q) s += exact(q, at + i);
        wrong += out[i] != s, wrong += inplace[at + i] != s;
      }
      std::vector<float> gathered(total, -1.0f), own(mine), gin(total, -1.0f);
      for (size_t i = 0; i < mine; ++i) own[i] = gin[at + i] = float(r * 100 + int(i));
      c.all_gather(own.data(), gathered.data(), counts, DType::F32).wait();
      c.all_gather(gin.data() + at, gin.data(), counts, DType::F32).wait();
      size_t k = 0;
      for (int q = 0; q < P; ++q)
        for (size_t i = 0; i < counts[size_t(q)]; ++i, ++k)
          wrong += gathered[k] != float(q * 100 + int(i)), wrong += gin[k] != gathered[k];
      return wrong;
    });
    expect_all_right(res, "reduce_scatter / all_gather P=" + std::to_string(P));
  }
}

TEST(InProcessComm, BroadcastPointToPointAndAllToAll) {
  for (int P : kWorlds) {
    auto res = run_ranks(P, [&](Communicator& c) {
      const int r = c.rank();
      size_t wrong = 0;
      for (int root = 0; root < P; ++root) {
        std::vector<int64_t> v(5, r == root ? root * 7 + 1 : -1);
        c.broadcast(v.data(), v.size(), DType::I64, root).wait();
        for (int64_t x : v) wrong += x != root * 7 + 1;
      }
      // A ring: send to r+1, receive from r-1, 3 + r elements (sizes differ per pair).
      const int next = (r + 1) % P, prev = (r - 1 + P) % P;
      std::vector<float> s(size_t(3 + r), float(r)), got(size_t(3 + prev), -1.0f);
      c.sendrecv(s.data(), s.size(), next, got.data(), got.size(), prev, DType::F32).wait();
      for (float x : got) wrong += x != float(prev);
      if (P > 1) {  // send/recv, sendrecv_many, sendrecv_upto: with both neighbours
        std::vector<float> a(4, float(r)), b(4, -1.0f), c1(4, -1.0f), c2(4, -1.0f);
        auto w1 = c.send(a.data(), 4, DType::F32, next);
        c.recv(b.data(), 4, DType::F32, prev).wait();
        w1.wait();
        for (float x : b) wrong += x != float(prev);
        const int dests[] = {next, prev}, sources[] = {prev, next};
        void* bufs[] = {c1.data(), c2.data()};
        c.sendrecv_many(a.data(), 4, dests, bufs, sources, DType::F32).wait();
        for (size_t i = 0; i < 4; ++i) wrong += c1[i] != float(prev), wrong += c2[i] != float(next);
        std::vector<float> up(size_t(1 + r), float(r)), room(16, -1.0f);
        size_t received = 99;
        c.sendrecv_upto(up.data(), up.size(), next, room.data(), room.size(), prev, &received,
                        DType::F32)
            .wait();
        wrong += received != size_t(1 + prev);
        for (size_t i = 0; i < received; ++i) wrong += room[i] != float(prev);
      }
      // all_to_all_v: rank r sends (r + 2q) % 4 elements to q, valued 10 r + q.
      std::vector<size_t> sc(static_cast<size_t>(P)), rc(static_cast<size_t>(P));
      size_t st = 0, rt = 0;
      for (int q = 0; q < P; ++q)
        sc[size_t(q)] = size_t((r + 2 * q) % 4), rc[size_t(q)] = size_t((q + 2 * r) % 4),
        st += sc[size_t(q)], rt += rc[size_t(q)];
      std::vector<int32_t> send, recv(rt, -1);
      for (int q = 0; q < P; ++q) send.insert(send.end(), sc[size_t(q)], 10 * r + q);
      c.all_to_all_v(send.data(), sc, recv.data(), rc, DType::I32).wait();
      size_t k = 0;
      for (int q = 0; q < P; ++q)
        for (size_t i = 0; i < rc[size_t(q)]; ++i) wrong += recv[k++] != 10 * q + r;
      c.barrier();
      return wrong;
    });
    expect_all_right(res, "broadcast / point to point / all_to_all P=" + std::to_string(P));
  }
}

// Waiting on the later of two Works completes the earlier first; the analytic bytes are counted.
TEST(InProcessComm, IssueOrderAndByteCounts) {
  const int P = 4;
  auto res = run_ranks(P, [&](Communicator& c) {
    std::vector<float> a(1000, 1.0f), g(4 * 3, -1.0f), own(3, float(c.rank()));
    const size_t counts[] = {3, 3, 3, 3};
    auto wa = c.all_reduce(a.data(), a.size(), DType::F32, ReduceOp::SUM);
    auto wg = c.all_gather(own.data(), g.data(), counts, DType::F32);
    wg.wait();
    size_t wrong = !wa.done();  // completed before wg, in issue order
    wa.wait();
    for (float x : a) wrong += x != 4.0f;
    for (size_t i = 0; i < g.size(); ++i) wrong += g[i] != float(i / 3);
    const auto& s = c.stats()[Kind::ALL_REDUCE];
    wrong += s.calls != 1 || s.bytes_sent != 2 * 3 * 4000 / 4 || s.bytes_received != 6000;
    wrong += c.stats()[Kind::ALL_GATHER].bytes_sent != 3 * 3 * 4;
    return wrong;
  });
  expect_all_right(res, "issue order and bytes");
}

TEST(InProcessComm, AnotherCollectiveIsNamed) {
  auto res = run_ranks(2, [&](Communicator& c) {
    std::vector<float> x(8, 1.0f), y(16);
    const size_t counts[] = {8, 8};
    if (c.rank() == 0)
      c.all_reduce(x.data(), 8, DType::F32, ReduceOp::SUM).wait();
    else
      c.all_gather(x.data(), y.data(), counts, DType::F32).wait();
    return size_t{0};
  });
  EXPECT_NE(res[0].error.find("rank 0 expected all_reduce from rank 1, which issued all_gather"),
            std::string::npos)
      << res[0].error;
  EXPECT_NE(res[1].error.find("rank 1 expected all_gather from rank 0, which issued all_reduce"),
            std::string::npos)
      << res[1].error;
}

}  // namespace
