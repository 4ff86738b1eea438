// The mpi backend's operations as MPI calls (see mpi_communicator.h), run on its worker thread:
// reduce_scatter and all_gather (one MPI call, or rooted calls per part and chunk when the total
// exceeds the chunk), sendrecv and sendrecv_many per chunk, and all_to_all_v / sendrecv_upto
// posted as non-blocking calls and checked when they complete.
#include "comm/mpi_communicator.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>

#include "comm/byte_accounting.h"
#include "comm/mpi_detail.h"
#include "comm/op_args.h"
#include "core/error.h"
#include "core/log.h"

namespace gossamer::comm {

using mpi_detail::at;
using mpi_detail::kTag;

void MpiCommunicator::run_reduce_scatter(const Op& op) {
  const size_t es = dtype_size(op.dtype), total = count_sum(op.counts);
  if (total == 0) return;
  const MPI_Datatype type = mpi_datatype(op.dtype);
  const MPI_Op mop = runtime_->op(op.reduce, op.dtype);
  const size_t mine = op.counts[size_t(rank_)], offset = count_offset(op.counts, rank_);
  if (total <= op.chunk) {
    for (int r = 0; r < size_; ++r) icounts_[size_t(r)] = int(op.counts[size_t(r)]);
    if (op.in_place) {
      // MPI's in-place form leaves this rank's part at the start of the buffer: move it home.
      void* base = const_cast<void*>(op.in);
      mpi_check(MPI_Reduce_scatter(MPI_IN_PLACE, base, icounts_.data(), type, mop, comm_),
                "MPI_Reduce_scatter");
      if (offset > 0 && mine > 0) std::memmove(at(base, offset, es), base, mine * es);
    } else {
      mpi_check(MPI_Reduce_scatter(op.in, op.out, icounts_.data(), type, mop, comm_),
                "MPI_Reduce_scatter");
    }
    return;
  }
  size_t part = 0;  // offset of rank r's part
  for (int r = 0; r < size_; ++r) {
    const size_t count = op.counts[size_t(r)];
    for (size_t i = 0; i < count; i += op.chunk) {
      const int c = int(std::min(op.chunk, count - i));
      const void* src = at(op.in, part + i, es);
      if (r == rank_)
        mpi_check(
            MPI_Reduce(op.in_place ? MPI_IN_PLACE : src, at(op.out, i, es), c, type, mop, r, comm_),
            "MPI_Reduce");
      else
        mpi_check(MPI_Reduce(src, nullptr, c, type, mop, r, comm_), "MPI_Reduce");
    }
    part += count;
  }
}

void MpiCommunicator::run_all_gather(const Op& op) {
  const size_t es = dtype_size(op.dtype), total = count_sum(op.counts);
  if (total == 0) return;
  const MPI_Datatype type = mpi_datatype(op.dtype);
  const size_t mine = op.counts[size_t(rank_)], offset = count_offset(op.counts, rank_);
  if (total <= op.chunk) {
    size_t displ = 0;
    for (int r = 0; r < size_; ++r) {
      icounts_[size_t(r)] = int(op.counts[size_t(r)]);
      idispls_[size_t(r)] = int(displ);
      displ += op.counts[size_t(r)];
    }
    mpi_check(MPI_Allgatherv(op.in_place ? MPI_IN_PLACE : op.in, int(mine), type, op.out,
                             icounts_.data(), idispls_.data(), type, comm_),
              "MPI_Allgatherv");
    return;
  }
  if (!op.in_place && mine > 0) std::memcpy(at(op.out, offset, es), op.in, mine * es);
  size_t part = 0;
  for (int r = 0; r < size_; ++r) {
    const size_t count = op.counts[size_t(r)];
    for (size_t i = 0; i < count; i += op.chunk)
      mpi_check(
          MPI_Bcast(at(op.out, part + i, es), int(std::min(op.chunk, count - i)), type, r, comm_),
          "MPI_Bcast");
    part += count;
  }
}

void MpiCommunicator::run_sendrecv(const Op& op) {
  const size_t es = dtype_size(op.dtype);
  const MPI_Datatype type = mpi_datatype(op.dtype);
  if (op.n <= op.chunk && op.n2 <= op.chunk) {
    MPI_Status status;
    mpi_check(MPI_Sendrecv(op.in, int(op.n), type, op.peer, kTag, op.out, int(op.n2), type,
                           op.peer2, kTag, comm_, &status),
              "MPI_Sendrecv");
    int got = 0;
    MPI_Get_count(&status, type, &got);
    GOSSAMER_CHECK(size_t(got) == op.n2,
                   "MPI_Sendrecv: expected %zu elements from rank %d, "
                   "received %d",
                   op.n2, op.peer2, got);
    return;
  }
  // Every chunk in flight at once; each direction's chunking depends only on its own count,
  // which both ends of it know, and MPI keeps messages between two ranks in order.
  requests_.clear();
  for (size_t i = 0; i < op.n2; i += op.chunk) {
    requests_.emplace_back();
    mpi_check(MPI_Irecv(at(op.out, i, es), int(std::min(op.chunk, op.n2 - i)), type, op.peer2, kTag,
                        comm_, &requests_.back()),
              "MPI_Irecv");
  }
  const size_t receives = requests_.size();
  for (size_t i = 0; i < op.n; i += op.chunk) {
    requests_.emplace_back();
    mpi_check(MPI_Isend(at(op.in, i, es), int(std::min(op.chunk, op.n - i)), type, op.peer, kTag,
                        comm_, &requests_.back()),
              "MPI_Isend");
  }
  statuses_.resize(requests_.size());
  mpi_check(wait_all(), "MPI_Waitall (sendrecv)");
  size_t got_total = 0;
  for (size_t k = 0; k < receives; ++k) {
    int got = 0;
    MPI_Get_count(&statuses_[k], type, &got);
    got_total += size_t(got);
  }
  GOSSAMER_CHECK(got_total == op.n2, "sendrecv: expected %zu elements from rank %d, received %zu",
                 op.n2, op.peer2, got_total);
}

// Every transfer of the exchange in flight at once: a peer that is late delays only the
// transfers with it, never the ones this rank owes its other peers.
void MpiCommunicator::run_sendrecv_many(const Op& op) {
  const size_t es = dtype_size(op.dtype);
  const MPI_Datatype type = mpi_datatype(op.dtype);
  requests_.clear();
  for (size_t s = 0; s < op.sources.size(); ++s)
    for (size_t i = 0; i < op.n; i += op.chunk) {
      requests_.emplace_back();
      mpi_check(MPI_Irecv(at(op.out_many[s], i, es), int(std::min(op.chunk, op.n - i)), type,
                          op.sources[s], kTag, comm_, &requests_.back()),
                "MPI_Irecv (sendrecv_many)");
    }
  for (int dest : op.dests)
    for (size_t i = 0; i < op.n; i += op.chunk) {
      requests_.emplace_back();
      mpi_check(MPI_Isend(at(op.in, i, es), int(std::min(op.chunk, op.n - i)), type, dest, kTag,
                          comm_, &requests_.back()),
                "MPI_Isend (sendrecv_many)");
    }
  statuses_.resize(requests_.size());
  mpi_check(wait_all(), "MPI_Waitall (sendrecv_many)");
}

// Every piece (at most op.chunk elements) from and to every peer is posted at once (not
// MPI_Alltoallv: its blocking wait spins, see worker_loop, and its int counts would need the
// ranks to agree on a path first), starting with the next rank so that the ranks do not all
// address rank 0 first; a pair's pieces depend only on its count, which both ends know, and
// pieces between two ranks on one tag match in order (MPI's non-overtaking rule; this also
// orders consecutive all_to_all_v in flight). The part for oneself is copied at once.
void MpiCommunicator::post_all_to_all(InFlight& f) {
  const Op& op = f.op;
  const size_t es = dtype_size(op.dtype);
  const MPI_Datatype type = mpi_datatype(op.dtype);
  const std::vector<size_t>& send_counts = op.counts;
  const std::vector<size_t>& recv_counts = op.counts2;
  size_t send_displ = 0, recv_displ = 0;
  for (size_t r = 0; r < size_t(size_); ++r) {
    offsets_[r] = send_displ, offsets2_[r] = recv_displ;
    send_displ += send_counts[r], recv_displ += recv_counts[r];
  }
  for (int k = 1; k < size_; ++k) {
    const int source = (rank_ + size_ - k) % size_;
    const size_t count = recv_counts[size_t(source)], base = offsets2_[size_t(source)];
    for (size_t i = 0; i < count; i += op.chunk) {
      f.requests.emplace_back();
      f.recv_peers.push_back(source);
      mpi_check(MPI_Irecv(at(op.out, base + i, es), int(std::min(op.chunk, count - i)), type,
                          source, kTag, comm_, &f.requests.back()),
                "MPI_Irecv (all_to_all)");
    }
  }
  for (int k = 1; k < size_; ++k) {
    const int dest = (rank_ + k) % size_;
    const size_t count = send_counts[size_t(dest)], base = offsets_[size_t(dest)];
    for (size_t i = 0; i < count; i += op.chunk) {
      f.requests.emplace_back();
      mpi_check(MPI_Isend(at(op.in, base + i, es), int(std::min(op.chunk, count - i)), type, dest,
                          kTag, comm_, &f.requests.back()),
                "MPI_Isend (all_to_all)");
    }
  }
  const size_t mine = send_counts[size_t(rank_)];
  if (mine > 0)
    std::memcpy(at(op.out, offsets2_[size_t(rank_)], es), at(op.in, offsets_[size_t(rank_)], es),
                mine * es);
  f.statuses.resize(f.requests.size());
}

// sendrecv_upto: one receive of up to the capacity from the source and one send to the dest.
// (Both requests start null, so a failed post leaves nothing for fail_in_flight to cancel.)
void MpiCommunicator::post_sendrecv_upto(InFlight& f) {
  const Op& op = f.op;
  const MPI_Datatype type = mpi_datatype(op.dtype);
  f.requests.assign(2, MPI_REQUEST_NULL);
  f.recv_peers.assign(1, op.peer2);
  mpi_check(MPI_Irecv(op.out, int(op.n2), type, op.peer2, kTag, comm_, &f.requests[0]),
            "MPI_Irecv (sendrecv_upto)");
  mpi_check(MPI_Isend(op.in, int(op.n), type, op.peer, kTag, comm_, &f.requests[1]),
            "MPI_Isend (sendrecv_upto)");
  f.statuses.resize(2);
}

// After MPI_Testall returned rc with both requests complete (or an error): a message longer
// than the capacity is MPI's truncation error; what arrived goes to *received and the stats.
void MpiCommunicator::check_sendrecv_upto(const InFlight& f, int rc) {
  const Op& op = f.op;
  const MPI_Datatype type = mpi_datatype(op.dtype);
  if (rc == MPI_ERR_IN_STATUS && f.statuses[0].MPI_ERROR != MPI_SUCCESS &&
      f.statuses[0].MPI_ERROR != MPI_ERR_PENDING)
    fail("MPI_Irecv (sendrecv_upto): from rank %d (at most %zu elements): %s", op.peer2, op.n2,
         mpi_error_string(f.statuses[0].MPI_ERROR).c_str());
  mpi_check(rc, "MPI_Testall (sendrecv_upto)");
  int n = 0;
  MPI_Get_count(&f.statuses[0], type, &n);
  GOSSAMER_CHECK(n != MPI_UNDEFINED && n >= 0,
                 "sendrecv_upto: rank %d sent a message that is not a whole number of %s elements",
                 op.peer2, dtype_name(op.dtype));
  *op.received = size_t(n);
  if (op.peer2 == rank_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  upto_received_ += int64_t(size_t(n) * dtype_size(op.dtype));
}

// After MPI_Testall returned rc with every request of f complete (or an error): the errors of
// the receives, then what arrived from each source against what was expected.
void MpiCommunicator::check_all_to_all(const InFlight& f, int rc) {
  const MPI_Datatype type = mpi_datatype(f.op.dtype);
  const std::vector<size_t>& recv_counts = f.op.counts2;
  const size_t receives = f.recv_peers.size();
  if (rc == MPI_ERR_IN_STATUS)
    for (size_t k = 0; k < receives; ++k)
      if (f.statuses[k].MPI_ERROR != MPI_SUCCESS && f.statuses[k].MPI_ERROR != MPI_ERR_PENDING)
        fail("MPI_Irecv (all_to_all): from rank %d (expected %zu elements): %s", f.recv_peers[k],
             recv_counts[size_t(f.recv_peers[k])],
             mpi_error_string(f.statuses[k].MPI_ERROR).c_str());
  mpi_check(rc, "MPI_Testall (all_to_all)");
  // A shorter piece than posted is no MPI error: compare what arrived from each source.
  size_t got = 0;
  for (size_t k = 0; k < receives; ++k) {
    int n = 0;
    MPI_Get_count(&f.statuses[k], type, &n);
    got += size_t(n);
    const int source = f.recv_peers[k];
    if (k + 1 < receives && f.recv_peers[k + 1] == source) continue;  // not its last piece
    GOSSAMER_CHECK(got == recv_counts[size_t(source)],
                   "all_to_all: expected %zu elements from rank %d, received %zu",
                   recv_counts[size_t(source)], source, got);
    got = 0;
  }
}

}  // namespace gossamer::comm
