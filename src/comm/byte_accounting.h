// Analytic byte accounting shared by every backend (the formulas of communicator.h): what an
// operation counts as sent and received by this rank, independent of the algorithm the backend
// really runs, so that counters compare across backends and tests can check them exactly.
// Invariant: all figures are integers; 2(N-1)/N*S for all_reduce is rounded down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "comm/communicator.h"

namespace gossamer::comm {

struct ByteCount {
  int64_t sent = 0;
  int64_t received = 0;
};

// n elements in place on every rank of a world of `world` ranks.
ByteCount all_reduce_bytes(size_t n, DType dtype, int world);
// counts[r] = rank r's part; `rank` is this rank.
ByteCount reduce_scatter_bytes(std::span<const size_t> counts, DType dtype, int rank);
ByteCount all_gather_bytes(std::span<const size_t> counts, DType dtype, int rank);
// Chain from the root: every rank but the root receives S, every rank but (root + N - 1) mod N
// sends S.
ByteCount broadcast_bytes(size_t n, DType dtype, int root, int rank, int world);
ByteCount send_bytes(size_t n, DType dtype);
ByteCount recv_bytes(size_t n, DType dtype);
// What the call names, except that an exchange with oneself (dest or source == rank) moves no
// bytes between ranks and counts 0.
ByteCount sendrecv_bytes(size_t send_n, int dest, size_t recv_n, int source, DType dtype, int rank);
// send_counts[r] / recv_counts[r] = elements to / from rank r; the part with oneself (r == rank)
// is a local copy and counts 0.
ByteCount all_to_all_bytes(std::span<const size_t> send_counts, std::span<const size_t> recv_counts,
                           DType dtype, int rank);

// Adds one call and its bytes to the kind's counters (raw_bytes_sent too: the formula is the raw
// size).
void count_call(CommStats& stats, Kind kind, ByteCount bytes);

}  // namespace gossamer::comm
