// The zip decorator: wraps any host-buffer Communicator and runs sum all-reduces, sum
// reduce-scatters and all-gathers of bf16 and fp32 with its own algorithms (zip_collectives.h),
// compressed or plain, or hands them to the wrapped backend, as the policy decides
// (compression_policy.h); every other operation is passed through unchanged. One worker thread
// executes every operation in issue order (passed-through ones too, so the wrapped backend sees
// the same sequence on every rank) and decides each eligible operation's path when it starts,
// from values every rank holds identically: the configuration, the message size, the link and
// codec speeds agreed at construction (a MIN all-reduce of each rank's measurement, unless
// configured) and the ratio of the last compressed operation of the same kind and dtype
// (computed from sizes every rank received).
// Accounting: bytes_sent / bytes_received are what went on the wire (compressed messages and
// their size exchange); raw_bytes_sent is the uncompressed formula of communicator.h;
// compressed_calls counts the operations that ran compressed.
// Invariants: the plain and the compressed path give the same bits; decisions are identical on
// every rank (decisions() lists them, tests compare them across ranks).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "comm/byte_accounting.h"
#include "comm/communicator.h"
#include "comm/completion_state.h"
#include "comm/zip/compression_policy.h"
#include "comm/zip/zip_collectives.h"

namespace gossamer::comm::zip {

struct ZipOptions {
  Compression mode = Compression::COMPRESSION_ADAPTIVE;
  // parallel.sum_order = fixed: mode off wraps a backend whose sums are not in the fixed order
  // with mode plain, and adaptive falls back to plain instead of the backend's own collective.
  bool fixed_order = false;
  size_t min_bytes = size_t{256} << 10;            // smaller messages are never compressed
  double link_gbps = 0;                            // 0: measured at construction
  double codec_gbps = 0;                           // 0: measured at construction
  size_t segment_bytes = size_t{1} << 20;          // raw bytes per compressed pipeline step
  size_t plain_segment_bytes = size_t{512} << 10;  // raw bytes per uncompressed pipeline step
  CodecOptions codec;
};

class ZipCommunicator final : public Communicator {
 public:
  // Collective over the wrapped communicator's ranks (measures and agrees on speeds). Refuses
  // device buffers (the CUDA codec belongs to the CUDA backend) and mode off (use the inner one).
  ZipCommunicator(std::unique_ptr<Communicator> inner, const ZipOptions& options);
  ~ZipCommunicator() override;
  ZipCommunicator(const ZipCommunicator&) = delete;
  ZipCommunicator& operator=(const ZipCommunicator&) = delete;

  const char* backend() const override { return inner_->backend(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int local_rank() const override { return inner_->local_rank(); }
  bool device_buffers() const override { return false; }

  Work all_reduce(void* buf, size_t n, DType dtype, ReduceOp op) override;
  Work reduce_scatter(const void* in, void* out, std::span<const size_t> counts, DType dtype,
                      ReduceOp op) override;
  Work all_gather(const void* in, void* out, std::span<const size_t> counts, DType dtype) override;
  Work all_to_all_v(const void* send, std::span<const size_t> send_counts, void* recv,
                    std::span<const size_t> recv_counts, DType dtype) override;
  Work sendrecv_upto(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                     size_t recv_capacity, int source, size_t* received, DType dtype) override;
  Work broadcast(void* buf, size_t n, DType dtype, int root) override;
  Work send(const void* buf, size_t n, DType dtype, int peer) override;
  Work recv(void* buf, size_t n, DType dtype, int peer) override;
  Work sendrecv(const void* send_buf, size_t send_n, int dest, void* recv_buf, size_t recv_n,
                int source, DType dtype) override;
  Work sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                     std::span<void* const> recv_bufs, std::span<const int> sources,
                     DType dtype) override;
  void barrier() override;
  [[noreturn]] void abort(int exit_code, const std::string& message) override;
  std::string absent_peers() override { return inner_->absent_peers(); }
  SimClock* sim_clock() override { return inner_->sim_clock(); }
  void settle_stats() override;

  const ZipOptions& options() const { return options_; }
  // Adaptive: true when no call could ever pay on the agreed speeds (the codec alone would take
  // longer than the backend's own collective, at any ratio and size), identical on every rank.
  bool compression_never_pays() const;
  // Hands the wrapped communicator back; only before any operation was issued. This object is
  // then only destroyed.
  std::unique_ptr<Communicator> release_inner();
  double link_gbps() const { return link_gbps_; }
  double codec_gbps() const { return codec_gbps_; }
  // Every distinct decision taken so far ("all_reduce bf16 2097152 B -> compressed ..."), in
  // the order first taken (at most kMaxLoggedDecisions).
  std::vector<std::string> decisions() const;
  static constexpr size_t kMaxLoggedDecisions = 256;

 private:
  Work enqueue(Kind kind, size_t bytes, std::function<void()> task);
  void worker_loop();
  // Runs an eligible collective on the path the policy picks (worker thread).
  void run_eligible(Kind kind, size_t bytes, DType dtype, ByteCount formula,
                    const std::function<void()>& native, const std::function<Traffic(bool)>& own);
  void measure_speeds();

  std::unique_ptr<Communicator> inner_;
  ZipOptions options_;
  ZipCollectives collectives_;
  double link_gbps_ = 0, codec_gbps_ = 0;

  // Worker-only: the ratio estimate per (kind, dtype) and the decisions seen.
  std::map<std::pair<int, int>, double> ratio_;
  std::map<std::tuple<int, int, size_t, int>, bool> seen_;

  mutable std::mutex mutex_;
  std::condition_variable queue_cv_, idle_cv_;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<CompletionState>>> queue_;
  bool busy_ = false, stop_ = false;
  std::string failed_;                  // worker: the first error
  CommStats worker_delta_;              // under mutex_: corrections and counts from the worker
  std::vector<std::string> decisions_;  // under mutex_
  std::thread worker_;
};

// The decorator for parallel.compression and parallel.sum_order: inner itself for "off" unless
// fixed_order asks for the plain algorithms over a backend whose own sums are in another order.
std::unique_ptr<Communicator> wrap_with_compression(std::unique_ptr<Communicator> inner,
                                                    const ZipOptions& options);

}  // namespace gossamer::comm::zip
