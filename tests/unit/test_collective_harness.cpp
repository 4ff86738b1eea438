// The collective-benchmark harness (bench/collective_harness.h) that `gossamer bench comm` and
// bench_nccl check their results with: for 1-9 ranks and every operation, each rank's inputs
// (from the check pattern) are combined here the way the collective defines it, on the host, and
// every element of every rank's result must be what check_expected says. Also the sizes and the
// bus-bandwidth factors of nccl-tests, and bf16 exactness of the pattern's sums.
#include <gtest/gtest.h>

#include <vector>

#include "bench/collective_harness.h"

namespace {

using namespace gossamer::bench;

// Each rank's input of a check run, as the benchmarks lay it out.
std::vector<std::vector<int>> inputs(CollectiveOp op, const CheckPattern& p, size_t part,
                                     size_t total) {
  std::vector<std::vector<int>> in(size_t(p.world));
  for (int r = 0; r < p.world; ++r) {
    const size_t first = check_input_first(op, r, part), n = check_input_count(op, part, total);
    for (size_t i = 0; i < n; ++i) in[size_t(r)].push_back(p.value(r, first + i));
  }
  return in;
}

// Rank r's result, computed from the inputs by the collective's definition.
std::vector<int> result(CollectiveOp op, const std::vector<std::vector<int>>& in, int r,
                        size_t part, size_t total) {
  const int n = int(in.size());
  std::vector<int> out;
  switch (op) {
    case CollectiveOp::ALL_REDUCE:
    case CollectiveOp::REDUCE_SCATTER: {
      const size_t first = op == CollectiveOp::ALL_REDUCE ? 0 : size_t(r) * part;
      const size_t count = op == CollectiveOp::ALL_REDUCE ? total : part;
      for (size_t i = 0; i < count; ++i) {
        int s = 0;
        for (int q = 0; q < n; ++q) s += in[size_t(q)][first + i];
        out.push_back(s);
      }
      break;
    }
    case CollectiveOp::ALL_GATHER:
      for (int q = 0; q < n; ++q) out.insert(out.end(), in[size_t(q)].begin(), in[size_t(q)].end());
      break;
    case CollectiveOp::BROADCAST:
      out = in[0];
      break;
    case CollectiveOp::SENDRECV:
      out = in[size_t((r + n - 1) % n)];
      break;
    case CollectiveOp::ALL_TO_ALL:  // block q of the result: rank q's block r
      for (int q = 0; q < n; ++q)
        out.insert(out.end(), in[size_t(q)].begin() + long(size_t(r) * part),
                   in[size_t(q)].begin() + long(size_t(r + 1) * part));
      break;
  }
  return out;
}

TEST(CollectiveHarness, ExpectedResultsAreTheCollectivesDefinitions) {
  for (int n = 1; n <= 9; ++n)
    for (const CollectiveInfo& info : kCollectives)
      for (size_t bytes : {size_t(4) * 9 * 5, size_t(4096)}) {
        const CheckPattern p(n);
        size_t part = 0, total = 0;
        collective_shape(info.op, bytes, 4, n, part, total);
        ASSERT_GT(part, 0u);
        const auto in = inputs(info.op, p, part, total);
        for (int r = 0; r < n; ++r) {
          const std::vector<int> want = result(info.op, in, r, part, total);
          ASSERT_EQ(want.size(), check_output_count(info.op, part, total)) << info.name;
          int wrong = 0;
          for (size_t i = 0; i < want.size(); ++i)
            wrong += check_expected(info.op, p, r, part, i) != want[i];
          EXPECT_EQ(wrong, 0) << info.name << " at " << n << " ranks, rank " << r;
        }
      }
}

TEST(CollectiveHarness, SumsAreExactInBf16AndElementsCompareBitwise) {
  for (int n : {1, 2, 3, 8, 17, 64, 256}) {
    const CheckPattern p(n);
    for (size_t i = 0; i < 64; ++i) EXPECT_LE(p.sum(i), 256) << n;
  }
  std::vector<uint8_t> buf(8);
  for (bool bf16 : {false, true}) {
    store_element(buf.data(), bf16, 1, 37.0f);
    EXPECT_TRUE(element_equals(buf.data(), bf16, 1, 37.0f));
    EXPECT_FALSE(element_equals(buf.data(), bf16, 1, 38.0f));
  }
}

TEST(CollectiveHarness, SizesAndBusFactorsAreNcclTests) {
  size_t part = 0, total = 0;
  collective_shape(CollectiveOp::REDUCE_SCATTER, 1000, 4, 3, part, total);
  EXPECT_EQ(part, 83u);
  EXPECT_EQ(total, 249u);
  collective_shape(CollectiveOp::ALL_REDUCE, 1000, 2, 3, part, total);
  EXPECT_EQ(total, 500u);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::ALL_REDUCE, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::ALL_GATHER, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::BROADCAST, 4), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::SENDRECV, 8), 1.0);
  EXPECT_EQ(collective_from_name("all_to_all"), CollectiveOp::ALL_TO_ALL);
  EXPECT_FALSE(collective_from_name("allreduce").has_value());
}

}  // namespace
