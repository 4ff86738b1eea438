// Implementation of the mpi backend (mpi_communicator.h): argument checks and byte counting on
// the issuing thread, a FIFO queue, and one worker thread running blocking MPI calls (the
// collectives' MPI calls themselves: mpi_operations.cpp). Operations
// too big for one MPI call (counts are int) are split into chunks: all_reduce, broadcast and
// point-to-point per chunk; reduce_scatter / all_gather whose total exceeds the chunk fall back
// to one rooted MPI_Reduce / MPI_Bcast per rank's part and chunk; all_to_all_v whose totals
// exceed the chunk on any rank to MPI_Isend / MPI_Irecv of every piece to and from every peer.
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

MpiCommunicator::MpiCommunicator() : runtime_(MpiRuntime::acquire()) {
  mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "comm: MPI_Comm_dup(MPI_COMM_WORLD)");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &roll_call_), "comm: MPI_Comm_dup(MPI_COMM_WORLD)");
  MPI_Comm_set_errhandler(roll_call_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
            "comm: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_free(&node);
  for (std::vector<int>* v : {&icounts_, &idispls_}) v->resize(size_t(size_));
  offsets_.resize(size_t(size_));
  offsets2_.resize(size_t(size_));
  worker_ = std::thread(&MpiCommunicator::worker_loop, this);
  pthread_setname_np(worker_.native_handle(), "gossamer-mpi");
}

MpiCommunicator::~MpiCommunicator() {
  size_t pending = 0;
  bool drained = true;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stop_ = true;
    queue_cv_.notify_all();
    auto idle = [this] { return queue_.empty() && running_ == 0; };
    if (timeout_s_ > 0)
      drained = idle_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s_), idle);
    else
      idle_cv_.wait(lock, idle);
    pending = queue_.size() + running_;
  }
  if (!drained) {
    const std::string context =
        context_.empty() ? std::string() : strprintf(" (%s)", context_.c_str());
    abort(kExitPeerFailure,
          strprintf("rank %d: %zu operation(s) still pending at shutdown after %g s%s; a peer "
                    "rank died or hangs",
                    rank_, pending, timeout_s_, context.c_str()));
  }
  worker_.join();
  MPI_Comm_free(&roll_call_);
  MPI_Comm_free(&comm_);
}

void MpiCommunicator::set_max_chunk_bytes(size_t bytes) {
  GOSSAMER_CHECK(bytes >= 8, "comm: max chunk of %zu bytes, expected at least 8", bytes);
  max_chunk_bytes_ = bytes;
}

Work MpiCommunicator::enqueue(Op op, size_t bytes) {
  op.chunk = std::clamp<size_t>(max_chunk_bytes_ / dtype_size(op.dtype), 1, size_t(INT_MAX));
  op.context = context_;
  auto state = std::make_shared<CompletionState>();
  op.state = state;
  const Kind kind = op.kind;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++issued_;
    queue_.push_back(std::move(op));
  }
  queue_cv_.notify_one();
  return Work(std::move(state), this, kind, bytes);
}

// Ops start in issue order. An all_to_all_v or sendrecv_upto is posted and joins in_flight_ (at
// most kMaxInFlight), so the next operations start while its transfers run; every other operation
// runs to completion here (MPI progresses the posted transfers meanwhile). With transfers in flight
// and nothing queued, the worker tests them, yielding the core between rounds of tests.
void MpiCommunicator::worker_loop() {
  for (int idle_rounds = 0;;) {
    std::optional<Op> next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (in_flight_.empty()) queue_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty() && in_flight_.empty()) return;  // stop_ and drained
      if (!queue_.empty() && in_flight_.size() < kMaxInFlight) {
        next = std::move(queue_.front());
        queue_.pop_front();
        ++running_;
      }
    }
    if (next) start(std::move(*next));
    if (progress_in_flight() || next)
      idle_rounds = 0;
    else if (++idle_rounds >= 64)
      std::this_thread::yield();
  }
}

std::string MpiCommunicator::record_failure(const Op& op, const std::exception& e) {
  const std::string context =
      op.context.empty() ? std::string() : strprintf(" (%s)", op.context.c_str());
  if (failed_.empty())
    failed_ = strprintf("rank %d: mpi %s failed%s: %s", rank_, kind_name(op.kind), context.c_str(),
                        e.what());
  return failed_;
}

void MpiCommunicator::start(Op op) {
  if (!failed_.empty()) {
    finish(op, strprintf("rank %d: %s not run: an earlier operation failed (%s)", rank_,
                         kind_name(op.kind), failed_.c_str()));
    return;
  }
  if (op.kind == Kind::ALL_TO_ALL || op.received) {
    InFlight f;
    f.op = std::move(op);
    try {
      if (f.op.received)
        post_sendrecv_upto(f);
      else
        post_all_to_all(f);
    } catch (const std::exception& e) {
      in_flight_.push_back(std::move(f));
      fail_in_flight(record_failure(in_flight_.back().op, e));
      return;
    }
    in_flight_.push_back(std::move(f));
    return;
  }
  std::string error;
  try {
    execute(op);
  } catch (const std::exception& e) {
    error = record_failure(op, e);
  }
  finish(op, std::move(error));
}

bool MpiCommunicator::progress_in_flight() {
  bool any = false;
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    int done = 0;
    const int rc =
        MPI_Testall(int(it->requests.size()), it->requests.data(), &done, it->statuses.data());
    if (rc == MPI_SUCCESS && !done) {
      ++it;
      continue;
    }
    try {
      if (it->op.received)
        check_sendrecv_upto(*it, rc);
      else
        check_all_to_all(*it, rc);
    } catch (const std::exception& e) {
      fail_in_flight(record_failure(it->op, e));
      return true;
    }
    finish(it->op, "");
    it = in_flight_.erase(it);
    any = true;
  }
  return any;
}

// After a failure every operation still in flight fails too: its pending transfers are
// cancelled and freed, so no stale receive matches a later message between the same pair.
void MpiCommunicator::fail_in_flight(const std::string& error) {
  for (InFlight& f : in_flight_) {
    for (MPI_Request& request : f.requests)
      if (request != MPI_REQUEST_NULL) {
        MPI_Cancel(&request);
        MPI_Request_free(&request);
      }
    finish(f.op, error.empty() ? failed_ : error);
  }
  in_flight_.clear();
}

void MpiCommunicator::finish(const Op& op, std::string error) {
  const bool ok = error.empty();
  op.state->complete(std::move(error));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    if (ok) {
      ++completed_;
      last_completed_ = op.context.empty()
                            ? std::string(kind_name(op.kind))
                            : strprintf("%s (%s)", kind_name(op.kind), op.context.c_str());
    }
  }
  idle_cv_.notify_all();
}

void MpiCommunicator::execute(const Op& op) {
  const size_t es = dtype_size(op.dtype);
  const MPI_Datatype type = mpi_datatype(op.dtype);
  switch (op.kind) {
    case Kind::ALL_REDUCE: {
      const MPI_Op mop = runtime_->op(op.reduce, op.dtype);
      for (size_t i = 0; i < op.n; i += op.chunk)
        mpi_check(MPI_Allreduce(MPI_IN_PLACE, at(op.out, i, es), int(std::min(op.chunk, op.n - i)),
                                type, mop, comm_),
                  "MPI_Allreduce");
      return;
    }
    case Kind::REDUCE_SCATTER:
      return run_reduce_scatter(op);
    case Kind::ALL_GATHER:
      return run_all_gather(op);
    case Kind::BROADCAST:
      for (size_t i = 0; i < op.n; i += op.chunk)
        mpi_check(
            MPI_Bcast(at(op.out, i, es), int(std::min(op.chunk, op.n - i)), type, op.peer, comm_),
            "MPI_Bcast");
      return;
    case Kind::SEND:
      for (size_t i = 0; i < op.n; i += op.chunk)
        mpi_check(MPI_Send(at(op.in, i, es), int(std::min(op.chunk, op.n - i)), type, op.peer, kTag,
                           comm_),
                  "MPI_Send");
      return;
    case Kind::RECV:
      for (size_t i = 0; i < op.n; i += op.chunk)
        recv_checked(at(op.out, i, es), std::min(op.chunk, op.n - i), type, op.peer, "MPI_Recv");
      return;
    case Kind::SENDRECV:
      return op.dests.empty() && op.sources.empty() ? run_sendrecv(op) : run_sendrecv_many(op);
    case Kind::BARRIER:
      mpi_check(MPI_Barrier(comm_), "MPI_Barrier");
      return;
    case Kind::ALL_TO_ALL:
      break;  // started by start(), never executed blocking
  }
}

// MPI_Waitall without holding a core: MPI_Testall (which also drives progress) in a loop that
// yields the core between tests after the first 64. Open MPI's blocking waits spin, and a
// spinning communication thread takes the core that computation or the zip codec needs on a
// machine with as many ranks as cores; the kernel keeps moving TCP data meanwhile.
int MpiCommunicator::wait_all() {
  for (int tests = 0;; ++tests) {
    int done = 0;
    const int rc = MPI_Testall(int(requests_.size()), requests_.data(), &done, statuses_.data());
    if (rc != MPI_SUCCESS || done) return rc;
    if (tests >= 64) std::this_thread::yield();
  }
}

void MpiCommunicator::recv_checked(void* buf, size_t n, MPI_Datatype type, int source,
                                   const char* what) {
  MPI_Status status;
  mpi_check(MPI_Recv(buf, int(n), type, source, kTag, comm_, &status), what);
  int got = 0;
  MPI_Get_count(&status, type, &got);
  GOSSAMER_CHECK(size_t(got) == n, "%s: expected %zu elements from rank %d, received %d", what, n,
                 source, got);
}

Work MpiCommunicator::sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                                    std::span<void* const> recv_bufs, std::span<const int> sources,
                                    DType dtype) {
  count_call(stats_, Kind::SENDRECV,
             check_sendrecv_many(send_buf, n, dests, recv_bufs, sources, dtype, rank_, size_));
  Op op;
  op.kind = Kind::SENDRECV, op.dtype = dtype, op.in = send_buf, op.n = n;
  op.dests.assign(dests.begin(), dests.end());
  op.sources.assign(sources.begin(), sources.end());
  op.out_many.assign(recv_bufs.begin(), recv_bufs.end());
  return enqueue(std::move(op), n * (dests.size() + sources.size()) * dtype_size(dtype));
}

Work MpiCommunicator::all_reduce(void* buf, size_t n, DType dtype, ReduceOp reduce) {
  check_buffer(Kind::ALL_REDUCE, buf, n, "buf");
  count_call(stats_, Kind::ALL_REDUCE, all_reduce_bytes(n, dtype, size_));
  Op op;
  op.kind = Kind::ALL_REDUCE, op.dtype = dtype, op.reduce = reduce, op.out = buf, op.n = n;
  return enqueue(std::move(op), n * dtype_size(dtype));
}

Work MpiCommunicator::reduce_scatter(const void* in, void* out, std::span<const size_t> counts,
                                     DType dtype, ReduceOp reduce) {
  Op op;
  op.in_place = check_reduce_scatter(in, out, counts, dtype, rank_, size_);
  count_call(stats_, Kind::REDUCE_SCATTER, reduce_scatter_bytes(counts, dtype, rank_));
  op.kind = Kind::REDUCE_SCATTER, op.dtype = dtype, op.reduce = reduce, op.in = in, op.out = out;
  op.counts.assign(counts.begin(), counts.end());
  return enqueue(std::move(op), count_sum(counts) * dtype_size(dtype));
}

Work MpiCommunicator::all_gather(const void* in, void* out, std::span<const size_t> counts,
                                 DType dtype) {
  Op op;
  op.in_place = check_all_gather(in, out, counts, dtype, rank_, size_);
  count_call(stats_, Kind::ALL_GATHER, all_gather_bytes(counts, dtype, rank_));
  op.kind = Kind::ALL_GATHER, op.dtype = dtype, op.in = in, op.out = out;
  op.counts.assign(counts.begin(), counts.end());
  return enqueue(std::move(op), count_sum(counts) * dtype_size(dtype));
}

Work MpiCommunicator::broadcast(void* buf, size_t n, DType dtype, int root) {
  check_root(Kind::BROADCAST, root, size_);
  check_buffer(Kind::BROADCAST, buf, n, "buf");
  count_call(stats_, Kind::BROADCAST, broadcast_bytes(n, dtype, root, rank_, size_));
  Op op;
  op.kind = Kind::BROADCAST, op.dtype = dtype, op.out = buf, op.n = n, op.peer = root;
  return enqueue(std::move(op), n * dtype_size(dtype));
}

Work MpiCommunicator::send(const void* buf, size_t n, DType dtype, int peer) {
  check_peer(Kind::SEND, peer, rank_, size_, false);
  check_buffer(Kind::SEND, buf, n, "buf");
  count_call(stats_, Kind::SEND, send_bytes(n, dtype));
  Op op;
  op.kind = Kind::SEND, op.dtype = dtype, op.in = buf, op.n = n, op.peer = peer;
  return enqueue(std::move(op), n * dtype_size(dtype));
}

Work MpiCommunicator::recv(void* buf, size_t n, DType dtype, int peer) {
  check_peer(Kind::RECV, peer, rank_, size_, false);
  check_buffer(Kind::RECV, buf, n, "buf");
  count_call(stats_, Kind::RECV, recv_bytes(n, dtype));
  Op op;
  op.kind = Kind::RECV, op.dtype = dtype, op.out = buf, op.n = n, op.peer = peer;
  return enqueue(std::move(op), n * dtype_size(dtype));
}

Work MpiCommunicator::sendrecv(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                               size_t recv_n, int source, DType dtype) {
  check_sendrecv(send_buf, send_n, dest, recv_buf, recv_n, source, dtype, rank_, size_);
  count_call(stats_, Kind::SENDRECV, sendrecv_bytes(send_n, dest, recv_n, source, dtype, rank_));
  Op op;
  op.kind = Kind::SENDRECV, op.dtype = dtype, op.in = send_buf, op.n = send_n, op.peer = dest;
  op.out = recv_buf, op.n2 = recv_n, op.peer2 = source;
  return enqueue(std::move(op), (send_n + recv_n) * dtype_size(dtype));
}

Work MpiCommunicator::all_to_all_v(const void* send, std::span<const size_t> send_counts,
                                   void* recv, std::span<const size_t> recv_counts, DType dtype) {
  check_all_to_all_v(send, send_counts, recv, recv_counts, dtype, rank_, size_);
  count_call(stats_, Kind::ALL_TO_ALL, all_to_all_bytes(send_counts, recv_counts, dtype, rank_));
  Op op;
  op.kind = Kind::ALL_TO_ALL, op.dtype = dtype, op.in = send, op.out = recv;
  op.counts.assign(send_counts.begin(), send_counts.end());
  op.counts2.assign(recv_counts.begin(), recv_counts.end());
  return enqueue(std::move(op),
                 (count_sum(send_counts) + count_sum(recv_counts)) * dtype_size(dtype));
}

Work MpiCommunicator::sendrecv_upto(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                                    size_t recv_capacity, int source, size_t* received,
                                    DType dtype) {
  check_sendrecv(send_buf, send_n, dest, recv_buf, recv_capacity, source, dtype, rank_, size_);
  GOSSAMER_CHECK(received != nullptr, "comm sendrecv_upto: received is null");
  const size_t es = dtype_size(dtype), limit = std::min(max_chunk_bytes_ / es, size_t(INT_MAX));
  for (size_t n : {send_n, recv_capacity})  // one message each way: never split
    GOSSAMER_CHECK(n <= limit,
                   "comm sendrecv_upto: %zu elements in one message, above the limit of %zu", n,
                   limit);
  count_call(stats_, Kind::SENDRECV, sendrecv_bytes(send_n, dest, 0, source, dtype, rank_));
  Op op;
  op.kind = Kind::SENDRECV, op.dtype = dtype, op.in = send_buf, op.n = send_n, op.peer = dest;
  op.out = recv_buf, op.n2 = recv_capacity, op.peer2 = source, op.received = received;
  return enqueue(std::move(op), (send_n + recv_capacity) * es);
}

// sendrecv_upto learns the bytes it received when it completes, on the worker.
void MpiCommunicator::settle_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_[Kind::SENDRECV].bytes_received += upto_received_;
  upto_received_ = 0;
}

void MpiCommunicator::barrier() {
  count_call(stats_, Kind::BARRIER, {});
  Op op;
  op.kind = Kind::BARRIER;
  enqueue(std::move(op), 0).wait();
}

std::string MpiCommunicator::absent_peers() {
  if (size_ < 2) return {};
  struct Counts {
    int64_t issued, completed;
  };
  Counts mine{};
  std::string last;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mine = {issued_, completed_};
    last = last_completed_;
  }
  // Every rank that times out sends its counts to all others and listens; the messages are
  // small (sent eagerly), so a rank that times out a little later still finds them.
  const double grace = std::clamp(timeout_s_ / 2, 0.5, 10.0);
  std::vector<Counts> theirs(size_t(size_), Counts{-1, -1});
  std::vector<MPI_Request> recvs(size_t(size_), MPI_REQUEST_NULL), sends = recvs;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    MPI_Irecv(&theirs[size_t(p)], int(sizeof(Counts)), MPI_BYTE, p, kTag, roll_call_,
              &recvs[size_t(p)]);
    MPI_Isend(&mine, int(sizeof(Counts)), MPI_BYTE, p, kTag, roll_call_, &sends[size_t(p)]);
  }
  std::vector<bool> answered(size_t(size_), false);
  answered[size_t(rank_)] = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
  while (std::chrono::steady_clock::now() < deadline &&
         std::count(answered.begin(), answered.end(), false) > 0) {
    for (int p = 0; p < size_; ++p) {
      int flag = 0;
      if (!answered[size_t(p)] &&
          MPI_Test(&recvs[size_t(p)], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag)
        answered[size_t(p)] = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The requests are left pending: the job is aborted right after.
  std::vector<int64_t> issued(size_t(size_), 0);
  for (int p = 0; p < size_; ++p) issued[size_t(p)] = theirs[size_t(p)].issued;
  issued[size_t(rank_)] = mine.issued;
  return roll_call_report(rank_, answered, issued, last, grace);
}

void MpiCommunicator::abort(int exit_code, const std::string& message) {
  mpi_abort_job(MPI_COMM_WORLD, rank_, exit_code, message);
}

}  // namespace gossamer::comm
