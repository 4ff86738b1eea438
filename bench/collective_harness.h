// The collective-benchmark harness that `gossamer bench comm` (comm_bench.cpp, any backend,
// one process per rank) and bench_nccl (bench/cuda, every GPU of one machine from one process)
// share, in the manner of nccl-tests: the operations and their names, how much data a size
// means, exactly representable check data and the result each rank must hold, the bus-bandwidth
// factors, the median, and one small table per collective. Header-only and free of the
// communicator, so the GPU-only build (cmake/gpu_only.cmake) compiles it with bench_nccl.
// Invariant: both benchmarks check with the same data against the same expectation, and print
// the same columns (size, count, type, redop, root, time, algbw, busbw, ratio, #wrong).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/bf16.h"
#include "core/median.h"

namespace gossamer::bench {

enum class CollectiveOp { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST, SENDRECV, ALL_TO_ALL };

struct CollectiveInfo {
  CollectiveOp op;
  const char* name;
  bool reduces;       // a sum (redop "sum"; else "none")
  bool split;         // a size is divided into one part per rank (count = per rank)
  double bus_factor;  // of (n-1)/n: 2 for all_reduce, 1 for the split ones, 0 for "x 1"
};

inline constexpr CollectiveInfo kCollectives[] = {
    {CollectiveOp::ALL_REDUCE, "all_reduce", true, false, 2},
    {CollectiveOp::REDUCE_SCATTER, "reduce_scatter", true, true, 1},
    {CollectiveOp::ALL_GATHER, "all_gather", false, true, 1},
    {CollectiveOp::BROADCAST, "broadcast", false, false, 0},
    {CollectiveOp::SENDRECV, "sendrecv", false, false, 0},
    {CollectiveOp::ALL_TO_ALL, "all_to_all", false, true, 1}};

inline const CollectiveInfo& collective_info(CollectiveOp op) {
  for (const CollectiveInfo& c : kCollectives)
    if (c.op == op) return c;
  return kCollectives[0];
}

inline std::optional<CollectiveOp> collective_from_name(std::string_view name) {
  for (const CollectiveInfo& c : kCollectives)
    if (name == c.name) return c.op;
  return std::nullopt;
}

// busbw = algbw x factor: all_reduce 2(n-1)/n; reduce_scatter, all_gather, all_to_all (n-1)/n;
// broadcast and sendrecv 1 (nccl-tests' definitions).
inline double bus_factor(CollectiveOp op, int n) {
  const double f = collective_info(op).bus_factor;
  return f == 0 ? 1.0 : f * double(n - 1) / n;
}

// Elements per rank's part (`part`) and in the whole payload (`total`) for a nominal size in
// bytes: the split collectives give each rank bytes / (es x n); the others move the whole.
inline void collective_shape(CollectiveOp op, size_t bytes, size_t es, int n, size_t& part,
                             size_t& total) {
  if (collective_info(op).split) {
    part = bytes / (es * size_t(n));
    total = part * size_t(n);
  } else {
    part = total = bytes / es;
  }
}

// Check data: element i of rank r is a small non-negative integer with m x world <= 256, so
// every sum over the ranks is exact in fp32 and in bf16, whatever the reduction order.
struct CheckPattern {
  int world;
  int m;
  explicit CheckPattern(int w) : world(w), m(std::clamp(256 / w, 1, 16)) {}
  int value(int rank, size_t i) const { return int((i * 7 + size_t(rank) * 3) % size_t(m)); }
  int sum(size_t i) const {
    int s = 0;
    for (int r = 0; r < world; ++r) s += value(r, i);
    return s;
  }
};

// Where rank `rank`'s input of a check run starts in the pattern, and how many elements it has:
// all_gather's input is the rank's own part; every other op's is the whole payload.
inline size_t check_input_first(CollectiveOp op, int rank, size_t part) {
  return op == CollectiveOp::ALL_GATHER ? size_t(rank) * part : 0;
}
inline size_t check_input_count(CollectiveOp op, size_t part, size_t total) {
  return op == CollectiveOp::ALL_GATHER ? part : total;
}
// Elements of rank `rank`'s result: reduce_scatter's is its part, every other op's the payload.
inline size_t check_output_count(CollectiveOp op, size_t part, size_t total) {
  return op == CollectiveOp::REDUCE_SCATTER ? part : total;
}

// The value element i of rank `rank`'s result must hold (broadcast: from root 0; sendrecv:
// from rank - 1; all_to_all: part s is rank s's elements for this rank).
inline int check_expected(CollectiveOp op, const CheckPattern& p, int rank, size_t part, size_t i) {
  const size_t c = std::max<size_t>(part, 1);
  switch (op) {
    case CollectiveOp::ALL_REDUCE:
      return p.sum(i);
    case CollectiveOp::REDUCE_SCATTER:
      return p.sum(size_t(rank) * part + i);
    case CollectiveOp::ALL_GATHER:
      return p.value(int(i / c), i);
    case CollectiveOp::BROADCAST:
      return p.value(0, i);
    case CollectiveOp::SENDRECV:
      return p.value((rank + p.world - 1) % p.world, i);
    case CollectiveOp::ALL_TO_ALL:
      return p.value(int(i / c), size_t(rank) * part + i % c);
  }
  return 0;
}

// Element i of a bf16 or fp32 array.
inline void store_element(uint8_t* p, bool bf16, size_t i, float v) {
  if (bf16) {
    const uint16_t h = float_to_bf16(v);
    std::memcpy(p + 2 * i, &h, 2);
  } else {
    std::memcpy(p + 4 * i, &v, 4);
  }
}
inline bool element_equals(const uint8_t* p, bool bf16, size_t i, float v) {
  if (bf16) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return h == float_to_bf16(v);
  }
  return std::memcmp(p + 4 * i, &v, 4) == 0;
}

// One row of a collective's table.
struct CollectiveRow {
  size_t bytes = 0;  // the whole payload
  size_t count = 0;  // its elements
  const char* type = "";
  double seconds = 0;
  double ratio = 1;    // raw / wire bytes (compression); 1 without
  int64_t wrong = -1;  // elements differing from check_expected; -1: not checked
};

// "# all_reduce" and the column header, then one line per row (printf; the caller flushes).
inline void print_collective_header(CollectiveOp op) {
  std::printf("#\n# %s\n", collective_info(op).name);
  std::printf("# %12s %12s %6s %6s %5s %11s %11s %11s %7s %7s\n", "size(B)", "count", "type",
              "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "ratio", "#wrong");
}
inline void print_collective_row(CollectiveOp op, int n, const CollectiveRow& r) {
  const double algbw = r.seconds > 0 ? double(r.bytes) / r.seconds * 1e-9 : 0;
  const std::string wrong = r.wrong < 0 ? "n/a" : std::to_string(r.wrong);
  std::printf("  %12zu %12zu %6s %6s %5d %11.2f %11.3f %11.3f %7.3f %7s\n", r.bytes, r.count,
              r.type, collective_info(op).reduces ? "sum" : "none",
              op == CollectiveOp::BROADCAST ? 0 : -1, r.seconds * 1e6, algbw,
              algbw * bus_factor(op, n), r.ratio, wrong.c_str());
}
// The legend both benchmarks print once.
inline void print_collective_legend() {
  std::printf(
      "# size: whole payload (reduce_scatter: the input, all_gather: the output, "
      "sendrecv: bytes sent by each rank, all_to_all: each rank's send buffer)\n");
  std::printf(
      "# algbw = size / time; busbw = algbw * factor: all_reduce 2(n-1)/n, "
      "reduce_scatter, all_gather and all_to_all (n-1)/n, broadcast and sendrecv 1\n");
}

}  // namespace gossamer::bench
