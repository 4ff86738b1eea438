// The "mpi" backend: host buffers, one MPI communicator (a duplicate of MPI_COMM_WORLD) per
// object, and ONE worker thread that executes the queued operations in issue order with blocking
// MPI calls, so communication progresses while the issuing thread computes (the design of
// PyTorch's ProcessGroupMPI). The issuing thread only enqueues and waits; the worker completes
// each Work (mutex + condition variable) or records its error, rethrown by Work::wait().
// After a timeout, absent_peers() holds a roll call on a second duplicate communicator: every
// rank that times out sends its operation counts to all others and listens for a grace period;
// ranks that do not answer are named (a stopped or hung process cannot answer).
// Invariant: operations start in issue order, and all but all_to_all_v and sendrecv_upto run
// one at a time and complete in that order; those two post their transfers and stay in flight
// (up to kMaxInFlight of them) while the worker starts the next operations, so a pipelined
// caller keeps several on the wire; they may complete after operations issued later.
// After a failure every operation started later fails without running, and every operation
// still in flight fails with it, its transfers cancelled (the ranks' sequences no longer
// match); operations that completed before the failure was seen keep their result. Counts above
// the chunk limit are split into several MPI calls, so counts beyond INT_MAX elements work.
// Point-to-point waits test and yield instead of spinning, leaving the core to computation and
// the zip codec.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/completion_state.h"
#include "comm/mpi_runtime.h"

namespace gossamer::comm {

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator();  // collective over MPI_COMM_WORLD (MPI_Comm_dup)
  // Drains the queue (aborting the job if that takes longer than the timeout), joins the worker,
  // frees the communicator, and finalizes MPI if this was the last user and we initialized it.
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  const char* backend() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  bool device_buffers() const override { return false; }
  // The transport defaults given to MPI before it started (mpi_transport_defaults.h), or empty.
  const std::string& transport_defaults() const { return runtime_->transport_defaults(); }

  Work all_reduce(void* buf, size_t n, DType dtype, ReduceOp op) override;
  Work reduce_scatter(const void* in, void* out, std::span<const size_t> counts, DType dtype,
                      ReduceOp op) override;
  Work all_gather(const void* in, void* out, std::span<const size_t> counts, DType dtype) override;
  Work broadcast(void* buf, size_t n, DType dtype, int root) override;
  Work send(const void* buf, size_t n, DType dtype, int peer) override;
  Work recv(void* buf, size_t n, DType dtype, int peer) override;
  Work sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                     std::span<void* const> recv_bufs, std::span<const int> sources,
                     DType dtype) override;
  Work sendrecv(const void* send_buf, size_t send_n, int dest, void* recv_buf, size_t recv_n,
                int source, DType dtype) override;
  Work all_to_all_v(const void* send, std::span<const size_t> send_counts, void* recv,
                    std::span<const size_t> recv_counts, DType dtype) override;
  Work sendrecv_upto(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                     size_t recv_capacity, int source, size_t* received, DType dtype) override;
  void settle_stats() override;
  void barrier() override;
  [[noreturn]] void abort(int exit_code, const std::string& message) override;
  std::string absent_peers() override;

  // Largest payload of one MPI call, in bytes (default 1 GiB; never more than INT_MAX
  // elements). Bigger operations are split. Applies to operations issued afterwards; tests lower
  // it to exercise the split paths with small buffers.
  void set_max_chunk_bytes(size_t bytes);

 private:
  struct Op {
    Kind kind = Kind::BARRIER;
    DType dtype = DType::U8;
    ReduceOp reduce = ReduceOp::SUM;
    const void* in = nullptr;
    void* out = nullptr;
    size_t n = 0, n2 = 0;     // element counts (sendrecv: send, recv)
    int peer = 0, peer2 = 0;  // root / peer (sendrecv: dest, source)
    bool in_place = false;
    std::vector<size_t> counts;       // reduce_scatter / all_gather; all_to_all: send counts
    std::vector<size_t> counts2;      // all_to_all: receive counts
    size_t* received = nullptr;       // sendrecv_upto (in flight like all_to_all): what arrived
    std::vector<int> dests, sources;  // sendrecv_many (op.in to every dest, out_many from sources)
    std::vector<void*> out_many;
    size_t chunk = 0;     // elements per MPI call
    std::string context;  // the communicator's context when issued, for errors
    std::shared_ptr<CompletionState> state;
  };

  // An all_to_all_v or sendrecv_upto whose transfers are posted and not yet all complete
  // (worker only).
  struct InFlight {
    Op op;
    std::vector<MPI_Request> requests;  // the receives first, then the sends
    std::vector<MPI_Status> statuses;
    std::vector<int> recv_peers;  // the source of each receive request
  };
  static constexpr size_t kMaxInFlight = 32;
  Work enqueue(Op op, size_t bytes);
  void worker_loop();
  void start(Op op);          // all_to_all_v: posted into in_flight_; others: run, finish
  bool progress_in_flight();  // tests in_flight_, finishes what completed; true if any
  void fail_in_flight(const std::string& error);  // cancels and fails every op in flight
  void finish(const Op& op, std::string error);   // completes the Work, counts it
  std::string record_failure(const Op& op, const std::exception& e);  // sets failed_ once
  void execute(const Op& op);
  void run_reduce_scatter(const Op& op);
  void run_all_gather(const Op& op);
  void run_sendrecv(const Op& op);
  void run_sendrecv_many(const Op& op);
  void post_all_to_all(InFlight& f);
  void check_all_to_all(const InFlight& f, int rc);
  void post_sendrecv_upto(InFlight& f);
  void check_sendrecv_upto(const InFlight& f, int rc);
  void recv_checked(void* buf, size_t n, MPI_Datatype type, int source, const char* what);
  int wait_all();  // requests_ into statuses_ (sized alike), yielding between tests

  std::shared_ptr<MpiRuntime> runtime_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm roll_call_ = MPI_COMM_NULL;  // absent_peers() only: never blocked by the worker
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  size_t max_chunk_bytes_ = size_t{1} << 30;

  std::mutex mutex_;
  std::condition_variable queue_cv_;  // worker: an op arrived or stop
  std::condition_variable idle_cv_;   // destructor: the queue drained
  std::deque<Op> queue_;
  size_t running_ = 0;  // ops taken from the queue and not finished (in flight included)
  bool stop_ = false;
  std::thread worker_;
  int64_t issued_ = 0;               // operations enqueued (issuing thread)
  int64_t completed_ = 0;            // operations completed without error (under mutex_)
  std::string last_completed_ = "";  // e.g. "all_reduce (step 12)" (under mutex_)
  int64_t upto_received_ = 0;        // bytes sendrecv_upto received, not yet in stats_ (mutex_)

  // Worker-only state, sized once.
  std::string failed_;  // the first error; later ops fail with it
  std::vector<int> icounts_, idispls_;
  std::vector<size_t> offsets_, offsets2_;  // all_to_all: where each rank's part starts
  std::deque<InFlight> in_flight_;          // oldest first
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
};

}  // namespace gossamer::comm
