// Implementation of the analytic byte accounting of byte_accounting.h.
#include "comm/byte_accounting.h"

namespace gossamer::comm {

namespace {
int64_t bytes_of(size_t n, DType dtype) {
  return int64_t(n) * int64_t(dtype_size(dtype));
}
int64_t total_of(std::span<const size_t> counts) {
  int64_t total = 0;
  for (size_t c : counts) total += int64_t(c);
  return total;
}
}  // namespace

ByteCount all_reduce_bytes(size_t n, DType dtype, int world) {
  const int64_t s = bytes_of(n, dtype);
  const int64_t b = world > 1 ? 2 * int64_t(world - 1) * s / world : 0;
  return {b, b};
}

ByteCount reduce_scatter_bytes(std::span<const size_t> counts, DType dtype, int rank) {
  const int64_t size = int64_t(dtype_size(dtype));
  const int64_t s = total_of(counts) * size;
  const int64_t mine = int64_t(counts[size_t(rank)]) * size;
  return {s - mine, int64_t(counts.size() - 1) * mine};
}

ByteCount all_gather_bytes(std::span<const size_t> counts, DType dtype, int rank) {
  const int64_t size = int64_t(dtype_size(dtype));
  const int64_t s = total_of(counts) * size;
  const int64_t mine = int64_t(counts[size_t(rank)]) * size;
  return {int64_t(counts.size() - 1) * mine, s - mine};
}

ByteCount broadcast_bytes(size_t n, DType dtype, int root, int rank, int world) {
  const int64_t s = bytes_of(n, dtype);
  const int last = (root + world - 1) % world;
  return {rank == last ? 0 : s, rank == root ? 0 : s};
}

ByteCount send_bytes(size_t n, DType dtype) {
  return {bytes_of(n, dtype), 0};
}

ByteCount recv_bytes(size_t n, DType dtype) {
  return {0, bytes_of(n, dtype)};
}

ByteCount sendrecv_bytes(size_t send_n, int dest, size_t recv_n, int source, DType dtype,
                         int rank) {
  return {dest == rank ? 0 : bytes_of(send_n, dtype), source == rank ? 0 : bytes_of(recv_n, dtype)};
}

ByteCount all_to_all_bytes(std::span<const size_t> send_counts, std::span<const size_t> recv_counts,
                           DType dtype, int rank) {
  ByteCount b;
  for (size_t r = 0; r < send_counts.size(); ++r)
    if (r != size_t(rank)) b.sent += bytes_of(send_counts[r], dtype);
  for (size_t r = 0; r < recv_counts.size(); ++r)
    if (r != size_t(rank)) b.received += bytes_of(recv_counts[r], dtype);
  return b;
}

void count_call(CommStats& stats, Kind kind, ByteCount bytes) {
  KindStats& k = stats[kind];
  k.calls += 1;
  k.bytes_sent += bytes.sent;
  k.raw_bytes_sent += bytes.sent;
  k.bytes_received += bytes.received;
}

}  // namespace gossamer::comm
