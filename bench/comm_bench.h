// `gossamer bench comm`: nccl-tests-style bandwidth benchmark of the communicator's collectives
// (all_reduce, reduce_scatter, all_gather, broadcast, sendrecv; all_to_all on request) over a
// geometric range of sizes. Rank 0 prints one table per operation: size, count, type, redop,
// root, time, algbw, busbw and #wrong (checked on exactly representable data, summed over ranks).
// Buffers are allocated once at the largest size; timed runs send Gaussian values (sigma 0.02),
// so that --compression sees data like gradients; the ratio column is raw / wire bytes. busbw
// factors: all_reduce 2(n-1)/n, reduce_scatter, all_gather and all_to_all (n-1)/n, broadcast and
// sendrecv 1 (docs/COMM.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gossamer::bench {

struct CommBenchOptions {
  std::string backend = "auto";  // auto | mpi | nccl | single
  std::vector<std::string> ops = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                  "sendrecv"};  // all_to_all on request only
  std::string dtype = "fp32";                   // fp32 | bf16
  size_t min_bytes = 8;
  size_t max_bytes = size_t{32} << 20;
  int step_factor = 4;  // sizes min, min*f, min*f^2, ... <= max
  int iters = 20;       // timed iterations per size (the median is reported)
  int warmup = 5;       // untimed iterations first
  bool check = true;    // count wrong elements after one extra checked run per size
  // The zip decorator (parallel.compression): off | plain | on | adaptive, and its settings.
  std::string compression = "off";
  size_t compression_min_bytes = size_t{256} << 10;
  double link_gbps = 0, codec_gbps = 0;
};

// Returns the exit status: 0, or 1 when any element was wrong on any rank.
int run_comm_bench(const CommBenchOptions& options);

}  // namespace gossamer::bench
