// Communicator: every byte exchanged between ranks goes through this interface. Collectives
// are asynchronous (each returns a Work handle to wait on, so communication overlaps compute)
// and counted (per collective kind: calls, bytes sent, bytes received, seconds waited).
// Backends: "single" (one process, no MPI runtime), "mpi" (host buffers) and "nccl" (device
// buffers). Invariants: every rank issues the same collectives in the same order; operations
// complete in issue order; a Work must be waited on before its buffers are read or reused.
//
// Byte accounting is analytic, not a wire measurement: S = the collective's payload in bytes,
// N = world size, c_r = rank r's element count. all_reduce: 2(N-1)/N*S sent and received.
// reduce_scatter: sent S - c_r*size (every other rank's part), received (N-1)*c_r*size.
// all_gather: sent (N-1)*c_r*size, received S - c_r*size. broadcast (chain from the root):
// received S by every rank but the root, sent S by every rank but the chain's last,
// (root + N - 1) mod N. send/recv/sendrecv: what the call names. all_to_all (all_to_all_v):
// sent sum over r != rank of send_counts[r]*size, received sum over r != rank of
// recv_counts[r]*size (the part for oneself is a local copy). sendrecv_upto (a sendrecv): what
// was sent, and received what arrived (counted once the Work is waited on). With equal counts these
// are the ring algorithms' figures, the ones nccl-tests' busbw assumes (docs/COMM.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_names.h"

namespace gossamer::comm {

enum class DType : uint8_t { F32, BF16, I32, I64, U8 };
inline constexpr int kNumDTypes = 5;
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

enum class ReduceOp : uint8_t { SUM, MAX, MIN };
const char* reduce_op_name(ReduceOp op);

enum class Kind : uint8_t {
  ALL_REDUCE,
  REDUCE_SCATTER,
  ALL_GATHER,
  BROADCAST,
  SEND,
  RECV,
  SENDRECV,
  BARRIER,
  ALL_TO_ALL,  // last, so that the existing kinds keep their numbers
};
inline constexpr int kNumKinds = 9;
// "all_reduce", "reduce_scatter", ... (the keys of metrics.jsonl's "comm" object).
const char* kind_name(Kind kind);

struct KindStats {
  int64_t calls = 0;
  int64_t bytes_sent = 0;  // on the wire (compressed where the zip decorator compressed)
  int64_t bytes_received = 0;
  double seconds_waited = 0;   // time callers spent blocked in Work::wait() / barrier()
  int64_t raw_bytes_sent = 0;  // the analytic figure before compression (= bytes_sent if none)
  int64_t compressed_calls = 0;
};

struct CommStats {
  std::array<KindStats, kNumKinds> kinds{};
  KindStats& operator[](Kind k) { return kinds[static_cast<int>(k)]; }
  const KindStats& operator[](Kind k) const { return kinds[static_cast<int>(k)]; }
  int64_t bytes_sent() const;
  int64_t bytes_received() const;
  double seconds_waited() const;
  // Element-wise this - earlier (per-step deltas from two snapshots).
  CommStats since(const CommStats& earlier) const;
  // Element-wise this + other (two communicators' traffic together).
  CommStats plus(const CommStats& other) const;
};

// Shared completion state of one operation; backends derive from it.
class WorkState {
 public:
  virtual ~WorkState() = default;
  // Blocks until the operation completed (true) or `seconds` passed (false; seconds <= 0:
  // no limit). Throws gossamer::Error if the operation failed.
  virtual bool wait_for(double seconds) = 0;
  virtual bool done() = 0;
  // Seconds from issue to completion, once done; NaN when the backend does not measure it.
  virtual double duration() { return std::numeric_limits<double>::quiet_NaN(); }
};

class Communicator;
class SimClock;

// The text absent_peers() returns, shared by the backends: after a roll call in which rank p
// answered (answered[p]) and had issued issued[p] operations (read only for ranks that answered),
// the ranks that did not answer and the last operation completed on this rank (`last`, "" if
// none), or, when all answered, whether they wait in the same operation.
std::string roll_call_report(int rank, const std::vector<bool>& answered,
                             const std::vector<int64_t>& issued, const std::string& last,
                             double grace_s);

// Handle to an asynchronous operation. A default-constructed Work is already complete.
class Work {
 public:
  Work() = default;
  Work(std::shared_ptr<WorkState> state, Communicator* comm, Kind kind, size_t bytes)
      : state_(std::move(state)), comm_(comm), kind_(kind), bytes_(bytes) {}
  // Blocks until complete and adds the blocked time to the kind's seconds_waited. Past the
  // communicator's timeout, aborts the job naming the rank, the operation and the context.
  void wait();
  bool done() const { return !state_ || state_->done(); }
  // Seconds from issue to completion (after wait()); 0 for an empty Work, NaN if unknown.
  double duration() const { return state_ ? state_->duration() : 0.0; }

 private:
  std::shared_ptr<WorkState> state_;
  Communicator* comm_ = nullptr;
  Kind kind_ = Kind::BARRIER;
  size_t bytes_ = 0;  // payload, for the timeout message
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual const char* backend() const = 0;  // "single", "mpi", "nccl", "inprocess"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // rank among the processes of this node
  // Whether buffers passed to collectives live in device memory (nccl) or host memory.
  virtual bool device_buffers() const = 0;
  // Whether this backend's own float sums are in the fixed order of the zip decorator's plain
  // algorithms (zip_collectives.h: each element summed at its owner, own value first, then rank
  // - 1, rank - 2, ...), so no decorator is needed for parallel.sum_order = fixed.
  virtual bool sums_in_fixed_order() const { return size() == 1; }

  // In place: buf (n) <- op over ranks of buf.
  virtual Work all_reduce(void* buf, size_t n, DType dtype, ReduceOp op) = 0;
  // in (sum of counts) is reduced over ranks; out (counts[rank()]) receives this rank's part,
  // the elements [sum(counts[0..rank)), +counts[rank]) of the result. counts.size() == size().
  // out may point into in at this rank's offset (in place).
  virtual Work reduce_scatter(const void* in, void* out, std::span<const size_t> counts,
                              DType dtype, ReduceOp op) = 0;
  // in (counts[rank()]) from every rank, concatenated in rank order into out (sum of counts).
  // in may point into out at this rank's offset (in place).
  virtual Work all_gather(const void* in, void* out, std::span<const size_t> counts,
                          DType dtype) = 0;
  virtual Work broadcast(void* buf, size_t n, DType dtype, int root) = 0;
  virtual Work send(const void* buf, size_t n, DType dtype, int peer) = 0;
  virtual Work recv(void* buf, size_t n, DType dtype, int peer) = 0;
  virtual Work sendrecv(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                        size_t recv_n, int source, DType dtype) = 0;
  // One buffer of n elements sent to each of dests, and n elements received from each of
  // sources into recv_bufs (same length as sources): a neighbour exchange, counted as one
  // sendrecv call. Backends that can post every transfer at once do (mpi), so a slow peer delays
  // only the exchanges with it; the default issues one sendrecv per pair (dests[i], sources[i]),
  // in order, which needs dests.size() == sources.size().
  virtual Work sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                             std::span<void* const> recv_bufs, std::span<const int> sources,
                             DType dtype);
  // send holds one part per destination rank, concatenated in rank order (part r has
  // send_counts[r] elements); recv receives one part per source rank, concatenated in rank order
  // (part r has recv_counts[r] elements, which must equal rank r's send_counts[this rank]).
  // The part for oneself is copied locally. send and recv must not overlap. Counted as one
  // all_to_all call. Every rank takes part, also with all counts 0.
  virtual Work all_to_all_v(const void* send, std::span<const size_t> send_counts, void* recv,
                            std::span<const size_t> recv_counts, DType dtype) = 0;
  // One message of send_n elements to dest and one from source into recv_buf, which holds at
  // most recv_capacity elements (more is an error); *received says how many arrived once the
  // Work has completed. Exactly one message each way, also of 0 elements. For messages whose
  // length only the sender knows (the zip decorator's compressed steps): no exchange of lengths
  // before the data. Backends keep several in flight where they can (mpi). Counted as one
  // sendrecv call, with the bytes that arrived. Host-buffer backends (nccl refuses it: NCCL's
  // receives need the sender's count).
  virtual Work sendrecv_upto(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                             size_t recv_capacity, int source, size_t* received, DType dtype) = 0;
  // Blocks until every rank reached it (after all previously issued operations).
  virtual void barrier() = 0;

  // Ends every rank of the job now: logs `message` and exits with `exit_code` (MPI_Abort on
  // mpi/nccl). Used when one rank fails so the others do not wait forever.
  [[noreturn]] virtual void abort(int exit_code, const std::string& message) = 0;

  // After an operation timed out: which peer ranks are not waiting with this one (stopped,
  // hung or dead) and what is known of them, as text for the timeout message ("" when the
  // backend cannot tell). May take a few seconds; the job is aborted right after.
  virtual std::string absent_peers() { return {}; }

  // This rank's simulated clock (parallel.sim, sim_clock.h): only ranks in one process have one;
  // decorators forward their inner communicator's. Null when time is not simulated.
  virtual SimClock* sim_clock() { return nullptr; }

  // A Work::wait() or barrier() blocked longer than this aborts the job (abort(kExitPeerFailure,
  // ...)) with a message naming this rank, the operation and the context. 0 = wait forever.
  void set_timeout(double seconds) { timeout_s_ = seconds; }
  double timeout() const { return timeout_s_; }
  // Free text added to error messages, e.g. "step 12" (set by the trainer every step).
  void set_context(std::string context) { context_ = std::move(context); }
  const std::string& context() const { return context_; }

  const CommStats& stats() const { return stats_; }
  CommStats& mutable_stats() { return stats_; }
  // Called by Work::wait() on the issuing thread once an operation has completed: a backend
  // whose worker thread learns counts only while running an operation (the zip decorator: wire
  // bytes after compression) folds them into stats_ here, so stats_ stays single-threaded.
  // Counts of an operation that was never waited on are therefore not settled.
  virtual void settle_stats() {}

 protected:
  CommStats stats_;
  double timeout_s_ = 0;
  std::string context_;
};

// Exit code of a job ended because a peer rank failed or a collective timed out.
inline constexpr int kExitPeerFailure = 3;

// parallel.backend.
enum class Backend { BACKEND_AUTO, BACKEND_SINGLE, BACKEND_MPI, BACKEND_NCCL };
// Where the buffers a communicator moves live: NCCL moves device memory only.
enum class BufferLocation { BUFFER_LOCATION_HOST, BUFFER_LOCATION_DEVICE };

// The backend `requested` resolves to for buffers in `where`, and why (for the log):
// auto = nccl for device buffers when built with NCCL and a GPU is visible; for host buffers
// never nccl: mpi when a launcher started this process with (possibly) more ranks, else
// single. A pure function of its arguments; throws gossamer::Error naming parallel.backend
// when the request cannot be met (nccl for host buffers, nccl without GPU or build, single
// under a launcher, device buffers without nccl).
struct BackendChoice {
  Backend backend;
  std::string why;
};
struct LaunchEnv;
BackendChoice choose_backend(Backend requested, BufferLocation where, const LaunchEnv& env,
                             int gpus, bool built_with_nccl);

// Builds the chosen backend (choose_backend with this process's launch environment and GPUs)
// and logs the choice on rank 0.
std::unique_ptr<Communicator> make_communicator(Backend backend, BufferLocation where);
// The same from a backend name ("auto", "single", "mpi", "nccl"; tools and tests).
std::unique_ptr<Communicator> make_communicator(std::string_view backend, BufferLocation where);

}  // namespace gossamer::comm

namespace gossamer {
template <>
struct EnumNames<comm::Backend> {
  static constexpr std::pair<comm::Backend, std::string_view> values[] = {
      {comm::Backend::BACKEND_AUTO, "auto"},
      {comm::Backend::BACKEND_SINGLE, "single"},
      {comm::Backend::BACKEND_MPI, "mpi"},
      {comm::Backend::BACKEND_NCCL, "nccl"}};
};
}  // namespace gossamer
