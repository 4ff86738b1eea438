// Argument checks shared by the backends: count vectors, null buffers, ranks, the in-place
// forms of reduce_scatter / all_gather and the two count vectors of all_to_all_v. Every check
// throws gossamer::Error naming the operation. Invariant: a buffer either is the in-place position
// exactly (out == in + offset of this rank for reduce_scatter, in == out + offset for all_gather)
// or does not overlap the other at all.
#pragma once

#include <cstddef>
#include <span>

#include "comm/byte_accounting.h"
#include "comm/communicator.h"

namespace gossamer::comm {

size_t count_sum(std::span<const size_t> counts);
// Elements before rank `rank`'s part: counts[0] + ... + counts[rank - 1].
size_t count_offset(std::span<const size_t> counts, int rank);

// p must be non-null when n > 0.
void check_buffer(Kind kind, const void* p, size_t n, const char* what);
void check_root(Kind kind, int root, int world);
// A valid rank; `allow_self` false rejects this rank.
void check_peer(Kind kind, int peer, int rank, int world, bool allow_self);

// The two buffers (of a_n and b_n elements) must not overlap.
void check_disjoint(Kind kind, const void* a, size_t a_n, const void* b, size_t b_n, DType dtype,
                    const char* a_name, const char* b_name);
// sendrecv (and sendrecv_upto, recv_n its room): dest and source ranks of the world (oneself
// allowed), buffers non-null when they hold elements, the two disjoint.
void check_sendrecv(const void* send_buf, size_t send_n, int dest, const void* recv_buf,
                    size_t recv_n, int source, DType dtype, int rank, int world);

// sendrecv_many: one receive buffer per source, every peer a valid rank other than oneself,
// buffers non-null when they hold elements, each receive buffer disjoint from the send buffer.
// Returns the call's bytes (n elements to every destination, from every source).
ByteCount check_sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                              std::span<void* const> recv_bufs, std::span<const int> sources,
                              DType dtype, int rank, int world);
// Checks counts (one per rank), buffers and overlap; returns true when the call is in place.
bool check_reduce_scatter(const void* in, const void* out, std::span<const size_t> counts,
                          DType dtype, int rank, int world);
bool check_all_gather(const void* in, const void* out, std::span<const size_t> counts, DType dtype,
                      int rank, int world);
// all_to_all_v: send_counts and recv_counts one per rank, buffers non-null when they hold
// elements, the part for oneself the same size both ways, send and recv disjoint.
void check_all_to_all_v(const void* send, std::span<const size_t> send_counts, const void* recv,
                        std::span<const size_t> recv_counts, DType dtype, int rank, int world);

}  // namespace gossamer::comm
