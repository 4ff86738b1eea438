// The zip decorator (zip_communicator.h): issue-side checks and analytic counts, one worker
// thread that runs every operation in order, the per-operation policy decision, the speed
// measurements at construction and the worker's accounting corrections.
#include "comm/zip/zip_communicator.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "comm/byte_accounting.h"
#include "comm/op_args.h"
#include "core/bf16.h"
#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"

namespace gossamer::comm::zip {

namespace {

bool compressible(DType dtype) {
  return dtype == DType::BF16 || dtype == DType::F32;
}

double initial_ratio(DType dtype) {
  return dtype == DType::BF16 ? 1.40 : 1.15;  // Gaussian data (docs/PERF.md, codec)
}

// Encode + decode throughput of this rank's codec in GB/s of raw bytes (best of three).
double measure_codec_gbps(const CodecOptions& codec) {
  const size_t n = size_t{1} << 21;
  std::vector<uint16_t> data(n);
  Rng rng(12345);
  for (auto& x : data) x = float_to_bf16(float(0.02 * rng.normal()));
  std::vector<uint8_t> packed(max_compressed_bytes(n, DType::BF16, codec.chunk_elems));
  std::vector<uint16_t> back(n);
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    Stopwatch watch;
    const size_t bytes = compress(data.data(), n, DType::BF16, packed, codec);
    decompress(std::span<const uint8_t>(packed.data(), bytes), back.data(), n, DType::BF16,
               codec.threads);
    best = std::max(best, 2.0 * double(n * 2) / watch.seconds() / 1e9);
  }
  return best;
}

// Bytes per second one rank sends to its ring neighbour while receiving from the other one,
// in GB/s: the best of seven exchanges of 8 MiB after one untimed, each after a barrier (a busy
// machine or a late peer only slows an exchange down, so the fastest is the closest to the link).
double measure_link_gbps(Communicator& comm) {
  const size_t bytes = size_t{8} << 20;
  std::vector<uint8_t> out(bytes, 1), in(bytes);
  const int p = comm.size(), r = comm.rank();
  double best = 0;
  for (int i = 0; i < 8; ++i) {
    comm.barrier();
    Stopwatch watch;
    comm.sendrecv(out.data(), bytes, (r + 1) % p, in.data(), bytes, (r + p - 1) % p, DType::U8)
        .wait();
    if (i > 0) best = std::max(best, double(bytes) / watch.seconds() / 1e9);
  }
  return best;
}

}  // namespace

ZipCommunicator::ZipCommunicator(std::unique_ptr<Communicator> inner, const ZipOptions& options)
    : inner_(std::move(inner)),
      options_(options),
      collectives_(*inner_, options.segment_bytes, options.plain_segment_bytes, options.codec) {
  GOSSAMER_CHECK(!inner_->device_buffers(),
                 "parallel.compression: the %s backend moves device buffers; the CPU codec needs "
                 "host buffers (a CUDA codec belongs to the CUDA backend)",
                 inner_->backend());
  GOSSAMER_CHECK(options_.mode != Compression::COMPRESSION_OFF,
                 "zip: mode off needs no decorator (use the wrapped communicator)");
  link_gbps_ = options_.link_gbps;
  codec_gbps_ = options_.codec_gbps;
  if (options_.mode == Compression::COMPRESSION_ADAPTIVE && inner_->size() > 1) measure_speeds();
  worker_ = std::thread(&ZipCommunicator::worker_loop, this);
  pthread_setname_np(worker_.native_handle(), "gossamer-zip");
}

void ZipCommunicator::measure_speeds() {
  float speeds[2] = {float(codec_gbps_), float(link_gbps_)};
  if (codec_gbps_ <= 0) speeds[0] = float(measure_codec_gbps(options_.codec));
  if (link_gbps_ <= 0) speeds[1] = float(measure_link_gbps(*inner_));
  inner_->all_reduce(speeds, 2, DType::F32, ReduceOp::MIN).wait();  // every rank: the same
  codec_gbps_ = speeds[0];
  link_gbps_ = speeds[1];
  if (inner_->rank() == 0)
    log_info(
        "zip: adaptive compression: link %.3f GB/s (%s), codec %.2f GB/s (%s), messages "
        "from %zu bytes",
        link_gbps_, options_.link_gbps > 0 ? "parallel.link_gbps" : "measured, min over ranks",
        codec_gbps_, options_.codec_gbps > 0 ? "parallel.codec_gbps" : "measured, min over ranks",
        options_.min_bytes);
}

ZipCommunicator::~ZipCommunicator() {
  bool drained = true;
  size_t pending = 0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stop_ = true;
    queue_cv_.notify_all();
    auto idle = [this] { return queue_.empty() && !busy_; };
    if (timeout_s_ > 0)
      drained = idle_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s_), idle);
    else
      idle_cv_.wait(lock, idle);
    pending = queue_.size() + (busy_ ? 1 : 0);
  }
  if (!drained)
    abort(kExitPeerFailure,
          strprintf("rank %d: %zu compressed-communicator operation(s) still pending at shutdown "
                    "after %g s; a peer rank died or hangs",
                    rank(), pending, timeout_s_));
  worker_.join();
}

Work ZipCommunicator::enqueue(Kind kind, size_t bytes, std::function<void()> task) {
  auto state = std::make_shared<CompletionState>();
  // The wrapped backend's messages (a timeout, the last operation completed) name the context
  // the operation was issued in; the worker, its only issuing thread, sets it.
  auto with_context = [this, context = context_, task = std::move(task)] {
    inner_->set_context(context);
    task();
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.emplace_back(std::move(with_context), state);
  }
  queue_cv_.notify_one();
  return Work(std::move(state), this, kind, bytes);
}

void ZipCommunicator::worker_loop() {
  for (;;) {
    std::pair<std::function<void()>, std::shared_ptr<CompletionState>> item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queue_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    std::string error;
    if (!failed_.empty()) {
      error =
          strprintf("rank %d: not run: an earlier operation failed (%s)", rank(), failed_.c_str());
    } else {
      try {
        item.first();
      } catch (const std::exception& e) {
        failed_ = strprintf("rank %d: %s", rank(), e.what());
        error = failed_;
      }
    }
    item.second->complete(std::move(error));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    idle_cv_.notify_all();
  }
}

void ZipCommunicator::run_eligible(Kind kind, size_t bytes, DType dtype, ByteCount formula,
                                   const std::function<void()>& native,
                                   const std::function<Traffic(bool)>& own) {
  const std::pair<int, int> key{int(kind), int(dtype)};
  if (!ratio_.count(key)) ratio_[key] = initial_ratio(dtype);
  PolicyInputs in;
  in.mode = options_.mode;
  in.fixed_order = options_.fixed_order;
  in.kind = kind;
  in.bytes = bytes;
  in.world = size();
  in.min_bytes = options_.min_bytes;
  in.link_gbps = link_gbps_;
  in.codec_gbps = codec_gbps_;
  in.ratio = ratio_[key];
  in.segment_bytes = options_.segment_bytes;
  const Decision d = decide(in);
  const auto seen_key = std::make_tuple(int(kind), int(dtype), bytes, int(d.path));
  if (!seen_.count(seen_key) && seen_.size() < kMaxLoggedDecisions) {
    seen_[seen_key] = true;
    std::string line = strprintf("%s %s %zu B -> %s", kind_name(kind), dtype_name(dtype), bytes,
                                 path_name(d.path));
    if (d.native_s > 0)
      line += strprintf(" (model: native %.4g s, compressed %.4g s at ratio %.3f)", d.native_s,
                        d.compressed_s, in.ratio);
    if (rank() == 0) log_info("zip: %s", line.c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    decisions_.push_back(std::move(line));
  }
  if (d.path == Path::NATIVE) {
    native();
    return;
  }
  const Traffic t = own(d.path == Path::COMPRESSED);
  if (d.path != Path::COMPRESSED) return;  // plain: the analytic counts are the wire's
  if (t.all_packed > 0) ratio_[key] = double(t.all_raw) / double(t.all_packed);
  std::lock_guard<std::mutex> lock(mutex_);
  KindStats& k = worker_delta_[kind];
  k.compressed_calls += 1;
  k.bytes_sent += t.sent - formula.sent;  // the issue counted the formula: replace it
  k.bytes_received += t.received - formula.received;
}

Work ZipCommunicator::all_reduce(void* buf, size_t n, DType dtype, ReduceOp op) {
  check_buffer(Kind::ALL_REDUCE, buf, n, "buf");
  const ByteCount bytes = all_reduce_bytes(n, dtype, size());
  count_call(stats_, Kind::ALL_REDUCE, bytes);
  const size_t payload = n * dtype_size(dtype);
  if (op != ReduceOp::SUM || !compressible(dtype) || size() < 2)
    return enqueue(Kind::ALL_REDUCE, payload,
                   [=, this] { inner_->all_reduce(buf, n, dtype, op).wait(); });
  return enqueue(Kind::ALL_REDUCE, payload, [=, this] {
    run_eligible(
        Kind::ALL_REDUCE, payload, dtype, bytes,
        [&] { inner_->all_reduce(buf, n, dtype, op).wait(); },
        [&](bool compressed) { return collectives_.all_reduce(buf, n, dtype, compressed); });
  });
}

Work ZipCommunicator::reduce_scatter(const void* in, void* out, std::span<const size_t> counts,
                                     DType dtype, ReduceOp op) {
  check_reduce_scatter(in, out, counts, dtype, rank(), size());
  const ByteCount bytes = reduce_scatter_bytes(counts, dtype, rank());
  count_call(stats_, Kind::REDUCE_SCATTER, bytes);
  std::vector<size_t> c(counts.begin(), counts.end());
  const size_t payload = count_sum(counts) * dtype_size(dtype);
  if (op != ReduceOp::SUM || !compressible(dtype) || size() < 2)
    return enqueue(Kind::REDUCE_SCATTER, payload,
                   [=, this] { inner_->reduce_scatter(in, out, c, dtype, op).wait(); });
  return enqueue(Kind::REDUCE_SCATTER, payload, [=, this] {
    run_eligible(
        Kind::REDUCE_SCATTER, payload, dtype, bytes,
        [&] { inner_->reduce_scatter(in, out, c, dtype, op).wait(); },
        [&](bool compressed) {
          return collectives_.reduce_scatter(in, out, c, dtype, compressed);
        });
  });
}

Work ZipCommunicator::all_gather(const void* in, void* out, std::span<const size_t> counts,
                                 DType dtype) {
  check_all_gather(in, out, counts, dtype, rank(), size());
  const ByteCount bytes = all_gather_bytes(counts, dtype, rank());
  count_call(stats_, Kind::ALL_GATHER, bytes);
  std::vector<size_t> c(counts.begin(), counts.end());
  const size_t payload = count_sum(counts) * dtype_size(dtype);
  if (!compressible(dtype) || size() < 2)
    return enqueue(Kind::ALL_GATHER, payload,
                   [=, this] { inner_->all_gather(in, out, c, dtype).wait(); });
  return enqueue(Kind::ALL_GATHER, payload, [=, this] {
    run_eligible(
        Kind::ALL_GATHER, payload, dtype, bytes,
        [&] { inner_->all_gather(in, out, c, dtype).wait(); },
        [&](bool compressed) { return collectives_.all_gather(in, out, c, dtype, compressed); });
  });
}

Work ZipCommunicator::all_to_all_v(const void* send, std::span<const size_t> send_counts,
                                   void* recv, std::span<const size_t> recv_counts, DType dtype) {
  count_call(stats_, Kind::ALL_TO_ALL, all_to_all_bytes(send_counts, recv_counts, dtype, rank()));
  std::vector<size_t> s(send_counts.begin(), send_counts.end()),
      r(recv_counts.begin(), recv_counts.end());
  return enqueue(Kind::ALL_TO_ALL, count_sum(send_counts) * dtype_size(dtype),
                 [=, this] { inner_->all_to_all_v(send, s, recv, r, dtype).wait(); });
}

Work ZipCommunicator::sendrecv_upto(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                                    size_t recv_capacity, int source, size_t* received,
                                    DType dtype) {
  check_peer(Kind::SENDRECV, dest, rank(), size(), true);
  check_peer(Kind::SENDRECV, source, rank(), size(), true);
  count_call(stats_, Kind::SENDRECV, sendrecv_bytes(send_n, dest, 0, source, dtype, rank()));
  const size_t es = dtype_size(dtype);
  return enqueue(Kind::SENDRECV, (send_n + recv_capacity) * es, [=, this] {
    inner_->sendrecv_upto(send_buf, send_n, dest, recv_buf, recv_capacity, source, received, dtype)
        .wait();
    if (source == rank()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    worker_delta_[Kind::SENDRECV].bytes_received += int64_t(*received * es);
  });
}

Work ZipCommunicator::broadcast(void* buf, size_t n, DType dtype, int root) {
  check_root(Kind::BROADCAST, root, size());
  count_call(stats_, Kind::BROADCAST, broadcast_bytes(n, dtype, root, rank(), size()));
  return enqueue(Kind::BROADCAST, n * dtype_size(dtype),
                 [=, this] { inner_->broadcast(buf, n, dtype, root).wait(); });
}

Work ZipCommunicator::send(const void* buf, size_t n, DType dtype, int peer) {
  check_peer(Kind::SEND, peer, rank(), size(), false);
  count_call(stats_, Kind::SEND, send_bytes(n, dtype));
  return enqueue(Kind::SEND, n * dtype_size(dtype),
                 [=, this] { inner_->send(buf, n, dtype, peer).wait(); });
}

Work ZipCommunicator::recv(void* buf, size_t n, DType dtype, int peer) {
  check_peer(Kind::RECV, peer, rank(), size(), false);
  count_call(stats_, Kind::RECV, recv_bytes(n, dtype));
  return enqueue(Kind::RECV, n * dtype_size(dtype),
                 [=, this] { inner_->recv(buf, n, dtype, peer).wait(); });
}

Work ZipCommunicator::sendrecv(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                               size_t recv_n, int source, DType dtype) {
  check_peer(Kind::SENDRECV, dest, rank(), size(), true);
  check_peer(Kind::SENDRECV, source, rank(), size(), true);
  count_call(stats_, Kind::SENDRECV, sendrecv_bytes(send_n, dest, recv_n, source, dtype, rank()));
  return enqueue(Kind::SENDRECV, send_n * dtype_size(dtype), [=, this] {
    inner_->sendrecv(send_buf, send_n, dest, recv_buf, recv_n, source, dtype).wait();
  });
}

Work ZipCommunicator::sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                                    std::span<void* const> recv_bufs, std::span<const int> sources,
                                    DType dtype) {
  GOSSAMER_CHECK(recv_bufs.size() == sources.size(),
                 "comm sendrecv_many: %zu sources, %zu receive buffers", sources.size(),
                 recv_bufs.size());
  ByteCount bytes;
  for (int d : dests) {
    check_peer(Kind::SENDRECV, d, rank(), size(), true);
    bytes.sent += sendrecv_bytes(n, d, 0, rank(), dtype, rank()).sent;
  }
  for (int s : sources) {
    check_peer(Kind::SENDRECV, s, rank(), size(), true);
    bytes.received += sendrecv_bytes(0, rank(), n, s, dtype, rank()).received;
  }
  count_call(stats_, Kind::SENDRECV, bytes);
  std::vector<int> d(dests.begin(), dests.end()), s(sources.begin(), sources.end());
  std::vector<void*> r(recv_bufs.begin(), recv_bufs.end());
  return enqueue(Kind::SENDRECV, n * dtype_size(dtype),
                 [=, this] { inner_->sendrecv_many(send_buf, n, d, r, s, dtype).wait(); });
}

void ZipCommunicator::barrier() {
  count_call(stats_, Kind::BARRIER, {});
  enqueue(Kind::BARRIER, 0, [this] { inner_->barrier(); }).wait();
}

void ZipCommunicator::abort(int exit_code, const std::string& message) {
  inner_->abort(exit_code, message);
  std::abort();  // not reached: the wrapped backend's abort does not return
}

void ZipCommunicator::settle_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (int i = 0; i < kNumKinds; ++i) {
    KindStats& to = stats_.kinds[size_t(i)];
    KindStats& from = worker_delta_.kinds[size_t(i)];
    to.bytes_sent += from.bytes_sent;
    to.bytes_received += from.bytes_received;
    to.compressed_calls += from.compressed_calls;
    from = KindStats{};
  }
}

std::vector<std::string> ZipCommunicator::decisions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return decisions_;
}

bool ZipCommunicator::compression_never_pays() const {
  if (options_.mode != Compression::COMPRESSION_ADAPTIVE || size() < 2) return false;
  return !compression_can_ever_pay(link_gbps_, codec_gbps_, size());
}

std::unique_ptr<Communicator> ZipCommunicator::release_inner() {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t calls = 0;
  for (const KindStats& k : stats_.kinds) calls += k.calls;
  GOSSAMER_CHECK(queue_.empty() && !busy_ && calls == 0,
                 "zip: release_inner after operations were issued");
  inner_->mutable_stats() = CommStats{};  // the start-up probes are not the run's traffic
  return std::move(inner_);
}

std::unique_ptr<Communicator> wrap_with_compression(std::unique_ptr<Communicator> inner,
                                                    const ZipOptions& options) {
  if (options.mode == Compression::COMPRESSION_OFF) {
    if (!options.fixed_order || inner->sums_in_fixed_order()) return inner;
    ZipOptions plain = options;
    plain.mode = Compression::COMPRESSION_PLAIN;
    if (inner->rank() == 0)
      log_info(
          "parallel.sum_order = fixed: sum all-reduces, sum reduce-scatters and all-gathers of "
          "bf16/fp32 run the zip decorator's plain algorithms over the %s backend, in the same "
          "order under mpirun, srun and --ranks and with any MPI library (parallel.sum_order = "
          "backend: the backend's own collectives)",
          inner->backend());
    return std::make_unique<ZipCommunicator>(std::move(inner), plain);
  }
  auto zip = std::make_unique<ZipCommunicator>(std::move(inner), options);
  if (zip->compression_never_pays()) {
    if (options.fixed_order) {
      if (zip->rank() == 0)
        log_info(
            "zip: parallel.compression = adaptive: the codec (%.2f GB/s) cannot beat this link "
            "(%.3f GB/s) at any ratio, so every call runs the plain algorithm "
            "(parallel.sum_order = fixed)",
            zip->codec_gbps(), zip->link_gbps());
      return zip;
    }
    if (zip->rank() == 0)
      log_info(
          "zip: parallel.compression = adaptive: the codec (%.2f GB/s) cannot beat this link "
          "(%.3f GB/s) at any ratio, so no call would be compressed; the %s backend runs "
          "every collective directly",
          zip->codec_gbps(), zip->link_gbps(), zip->backend());
    return zip->release_inner();
  }
  if (zip->rank() == 0)
    log_info(
        "zip: parallel.compression = %s over the %s backend (sum all-reduce, sum "
        "reduce-scatter and all-gather of bf16/fp32 of %zu bytes and more%s)",
        std::string(enum_name(options.mode)).c_str(), zip->backend(), options.min_bytes,
        options.mode == Compression::COMPRESSION_ADAPTIVE
            ? (options.fixed_order ? " when the model says it pays, else plain"
                                   : " when the model says it pays, else the backend's own")
            : "");
  return zip;
}

}  // namespace gossamer::comm::zip
