// Implementation of the argument checks of op_args.h.
#include "comm/op_args.h"

#include <cstdint>

#include "core/error.h"

namespace gossamer::comm {

namespace {

void check_counts(Kind kind, std::span<const size_t> counts, int world,
                  const char* what = "counts") {
  GOSSAMER_CHECK(counts.size() == size_t(world),
                 "comm %s: %s has %zu entries, expected one per rank (%d)", kind_name(kind), what,
                 counts.size(), world);
}

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

// whole: the buffer holding every rank's part; part: this rank's part.
bool check_parts(Kind kind, const void* whole, const void* part, std::span<const size_t> counts,
                 DType dtype, int rank, int world, const char* whole_name, const char* part_name) {
  check_counts(kind, counts, world);
  GOSSAMER_CHECK(rank >= 0 && rank < world, "comm %s: rank %d outside [0, %d)", kind_name(kind),
                 rank, world);
  const size_t size = dtype_size(dtype);
  const size_t total = count_sum(counts), mine = counts[size_t(rank)];
  check_buffer(kind, whole, total, whole_name);
  check_buffer(kind, part, mine, part_name);
  if (mine == 0) return false;
  const auto* at = static_cast<const char*>(whole) + count_offset(counts, rank) * size;
  if (part == at) return true;
  GOSSAMER_CHECK(!overlaps(whole, total * size, part, mine * size),
                 "comm %s: %s overlaps %s but is not this rank's part of it (in place needs %s "
                 "== %s + %zu elements)",
                 kind_name(kind), part_name, whole_name, part_name, whole_name,
                 count_offset(counts, rank));
  return false;
}

}  // namespace

size_t count_sum(std::span<const size_t> counts) {
  size_t total = 0;
  for (size_t c : counts) total += c;
  return total;
}

size_t count_offset(std::span<const size_t> counts, int rank) {
  size_t offset = 0;
  for (int r = 0; r < rank; ++r) offset += counts[size_t(r)];
  return offset;
}

void check_buffer(Kind kind, const void* p, size_t n, const char* what) {
  GOSSAMER_CHECK(p != nullptr || n == 0, "comm %s: %s is null but holds %zu elements",
                 kind_name(kind), what, n);
}

void check_root(Kind kind, int root, int world) {
  GOSSAMER_CHECK(root >= 0 && root < world, "comm %s: root %d outside [0, %d)", kind_name(kind),
                 root, world);
}

void check_peer(Kind kind, int peer, int rank, int world, bool allow_self) {
  GOSSAMER_CHECK(peer >= 0 && peer < world, "comm %s: peer rank %d outside [0, %d)",
                 kind_name(kind), peer, world);
  GOSSAMER_CHECK(allow_self || peer != rank,
                 "comm %s: peer rank %d is this rank (use sendrecv to exchange with oneself)",
                 kind_name(kind), peer);
}

void check_disjoint(Kind kind, const void* a, size_t a_n, const void* b, size_t b_n, DType dtype,
                    const char* a_name, const char* b_name) {
  const size_t size = dtype_size(dtype);
  GOSSAMER_CHECK(!overlaps(a, a_n * size, b, b_n * size), "comm %s: %s and %s overlap",
                 kind_name(kind), a_name, b_name);
}

bool check_reduce_scatter(const void* in, const void* out, std::span<const size_t> counts,
                          DType dtype, int rank, int world) {
  return check_parts(Kind::REDUCE_SCATTER, in, out, counts, dtype, rank, world, "in", "out");
}

void check_sendrecv(const void* send_buf, size_t send_n, int dest, const void* recv_buf,
                    size_t recv_n, int source, DType dtype, int rank, int world) {
  check_peer(Kind::SENDRECV, dest, rank, world, true);
  check_peer(Kind::SENDRECV, source, rank, world, true);
  check_buffer(Kind::SENDRECV, send_buf, send_n, "send_buf");
  check_buffer(Kind::SENDRECV, recv_buf, recv_n, "recv_buf");
  check_disjoint(Kind::SENDRECV, send_buf, send_n, recv_buf, recv_n, dtype, "send_buf", "recv_buf");
}

bool check_all_gather(const void* in, const void* out, std::span<const size_t> counts, DType dtype,
                      int rank, int world) {
  return check_parts(Kind::ALL_GATHER, out, in, counts, dtype, rank, world, "out", "in");
}

void check_all_to_all_v(const void* send, std::span<const size_t> send_counts, const void* recv,
                        std::span<const size_t> recv_counts, DType dtype, int rank, int world) {
  const Kind kind = Kind::ALL_TO_ALL;
  check_counts(kind, send_counts, world, "send_counts");
  check_counts(kind, recv_counts, world, "recv_counts");
  GOSSAMER_CHECK(rank >= 0 && rank < world, "comm %s: rank %d outside [0, %d)", kind_name(kind),
                 rank, world);
  const size_t send_n = count_sum(send_counts), recv_n = count_sum(recv_counts);
  check_buffer(kind, send, send_n, "send");
  check_buffer(kind, recv, recv_n, "recv");
  GOSSAMER_CHECK(send_counts[size_t(rank)] == recv_counts[size_t(rank)],
                 "comm %s: rank %d sends %zu elements to itself but receives %zu", kind_name(kind),
                 rank, send_counts[size_t(rank)], recv_counts[size_t(rank)]);
  check_disjoint(kind, send, send_n, recv, recv_n, dtype, "send", "recv");
}

ByteCount check_sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                              std::span<void* const> recv_bufs, std::span<const int> sources,
                              DType dtype, int rank, int world) {
  GOSSAMER_CHECK(recv_bufs.size() == sources.size(),
                 "comm sendrecv_many: %zu sources but %zu receive buffers", sources.size(),
                 recv_bufs.size());
  check_buffer(Kind::SENDRECV, send_buf, n, "send_buf");
  ByteCount bytes;
  for (int d : dests) {
    check_peer(Kind::SENDRECV, d, rank, world, false);
    bytes.sent += send_bytes(n, dtype).sent;
  }
  for (size_t s = 0; s < sources.size(); ++s) {
    check_peer(Kind::SENDRECV, sources[s], rank, world, false);
    check_buffer(Kind::SENDRECV, recv_bufs[s], n, "recv_buf");
    check_disjoint(Kind::SENDRECV, send_buf, n, recv_bufs[s], n, dtype, "send_buf", "recv_buf");
    bytes.received += recv_bytes(n, dtype).received;
  }
  return bytes;
}

}  // namespace gossamer::comm
