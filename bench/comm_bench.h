// `gossamer bench comm`: nccl-tests-style bandwidth benchmark of the communicator's collectives
// (all_reduce, reduce_scatter, all_gather, broadcast, sendrecv) over a geometric range of sizes.
// Rank 0 prints one table per operation: size, count, type, redop, root, time, algbw, busbw and
// #wrong (checked on exactly representable data, summed over ranks). Buffers are allocated once
// at the largest size. busbw factors: all_reduce 2(n-1)/n, reduce_scatter and all_gather
// (n-1)/n, broadcast and sendrecv 1 (docs/COMM.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gossamer::bench {

struct CommBenchOptions {
  std::string backend = "auto";  // auto | mpi | nccl | single
  std::vector<std::string> ops = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                  "sendrecv"};
  std::string dtype = "fp32";  // fp32 | bf16
  size_t min_bytes = 8;
  size_t max_bytes = size_t{32} << 20;
  int step_factor = 4;  // sizes min, min*f, min*f^2, ... <= max
  int iters = 20;       // timed iterations per size (the median is reported)
  int warmup = 5;       // untimed iterations first
  bool check = true;    // count wrong elements after one extra checked run per size
};

// Returns the exit status: 0, or 1 when any element was wrong on any rank.
int run_comm_bench(const CommBenchOptions& options);

}  // namespace gossamer::bench
