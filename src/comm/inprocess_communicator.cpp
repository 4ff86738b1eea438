// Implementation of the in-process backend (inprocess_communicator.h).
#include "comm/inprocess_communicator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "comm/byte_accounting.h"
#include "comm/op_args.h"
#include "comm/sim_clock.h"
#include "core/bf16.h"
#include "core/error.h"
#include "core/log.h"

namespace gossamer::comm {

namespace {

// Message bytes: resize() leaves new elements uninitialised (they are written right after).
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Bytes = std::vector<uint8_t, UninitAllocator<uint8_t>>;
using Clock = std::chrono::steady_clock;

// Collectives and point-to-point traffic never match each other's messages.
enum Channel { kCollective = 0, kPointToPoint = 1 };

// A collective's messages carry its number in the issuing rank's sequence of collectives (the
// same on every rank) and its stage, and are matched by them: a stage posted when an operation
// completes may follow a later operation's messages. Point-to-point messages match in order.
struct Message {
  Kind kind;
  uint64_t seq = 0;
  int stage = 0;
  Bytes data;
  double arrives = 0;  // simulated time (0 without a SimNetwork)
};

// What the others see of a rank in a roll call (InProcessCommunicator::absent_peers).
struct RankState {
  int waiting = 0;         // threads of the rank blocked for a message now
  bool answering = false;  // in a roll call itself (it timed out too)
  int64_t issued = 0;      // operations issued
  std::string last;        // the last operation completed, with its context ("" if none)
};

// The mailboxes of every (source, destination, channel), each rank's RankState, and the one
// lock they share.
class World {
 public:
  explicit World(int ranks)
      : ranks_(ranks), boxes_(size_t(ranks) * ranks * 2), states_(size_t(ranks)) {}
  int ranks() const { return ranks_; }

  RankState state(int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    return states_[size_t(rank)];
  }
  template <class F>
  void update(int rank, F&& f) {
    std::lock_guard<std::mutex> lock(mutex_);
    f(states_[size_t(rank)]);
  }

  void post(int from, int to, Channel ch, Kind kind, uint64_t seq, int stage, const void* data,
            size_t bytes, double arrives) {
    Message m{kind, seq, stage, {}, arrives};
    std::unique_lock<std::mutex> lock(mutex_);
    if (bytes > 0) {
      // A spare buffer that holds it (fresh memory costs page faults on every message).
      auto spare = spares_.lower_bound(bytes);
      if (spare != spares_.end()) {
        m.data = std::move(spare->second);
        spares_.erase(spare);
      }
      lock.unlock();
      m.data.resize(bytes);
      std::memcpy(m.data.data(), data, bytes);
      lock.lock();
    }
    box(from, to, ch).push_back(std::move(m));
    lock.unlock();
    cv_.notify_all();
  }

  // Keeps a received message's buffer for a later post (at most ranks^2 of them).
  void recycle(Bytes&& b) {
    if (b.capacity() == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (spares_.size() >= size_t(ranks_) * size_t(ranks_)) return;
    const size_t capacity = b.capacity();
    b.clear();
    spares_.emplace(capacity, std::move(b));
  }

  // The message from `from` to `to` on `ch` with (seq, stage), or the oldest one for
  // point-to-point; nullopt when none arrived by `deadline`.
  std::optional<Message> take(int from, int to, Channel ch, uint64_t seq, int stage,
                              std::optional<Clock::time_point> deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    std::deque<Message>& q = box(from, to, ch);
    auto found = q.end();
    auto ready = [&] {
      found =
          ch == kPointToPoint ? q.begin() : std::find_if(q.begin(), q.end(), [&](const Message& m) {
            return m.seq == seq && m.stage == stage;
          });
      return found != q.end();
    };
    RankState& waiter = states_[size_t(to)];
    ++waiter.waiting;
    bool arrived = true;
    if (!deadline)
      cv_.wait(lock, ready);
    else
      arrived = cv_.wait_until(lock, *deadline, ready);
    --waiter.waiting;
    if (!arrived) return std::nullopt;
    Message m = std::move(*found);
    q.erase(found);
    return m;
  }

 private:
  std::deque<Message>& box(int from, int to, Channel ch) {
    return boxes_[(size_t(from) * ranks_ + size_t(to)) * 2 + size_t(ch)];
  }
  const int ranks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::deque<Message>> boxes_;
  std::vector<RankState> states_;
  std::multimap<size_t, Bytes> spares_;  // by capacity
};

// An issued operation: stages, each expecting one message from each of its sources (in order)
// and then finishing, which writes outputs and may post messages and add the next stage.
struct Stage {
  std::vector<int> sources;
  Channel channel;
  Kind kind;
  std::function<void(std::vector<Bytes>&)> finish;
  uint64_t seq = 0;  // collectives: the operation's number and this stage's index
  int stage = 0;
};

struct Pending {
  Kind kind = Kind::BARRIER;
  std::string context;  // the communicator's context when it was issued
  std::deque<Stage> stages;
  std::vector<Bytes> got;  // of the front stage, so far
  bool done = false;
  std::string error;
  double sim_done = 0;  // simulated completion: known once done (issue time until then)
};

// out (n) op= in (n), elements of dtype; for bf16 sums `acc` holds the fp32 sums instead.
template <class T>
void fold(T* out, const T* in, size_t n, ReduceOp op) {
  for (size_t i = 0; i < n; ++i) {
    if (op == ReduceOp::SUM)
      out[i] = T(out[i] + in[i]);
    else if (op == ReduceOp::MAX)
      out[i] = std::max(out[i], in[i]);
    else
      out[i] = std::min(out[i], in[i]);
  }
}

// The owner's part of a reduction: `own` first, then parts[1], parts[2], ... (those of ranks
// owner-1, owner-2, ...); written to out (n elements of dtype).
void reduce_in_order(void* out, const void* own, const std::vector<const void*>& parts, size_t n,
                     DType dtype, ReduceOp op) {
  if (n == 0) return;
  if (dtype == DType::BF16) {  // fp32 accumulation, rounded once (the zip decorator's rule)
    std::vector<float> acc(n), next(n);
    const auto* o = static_cast<const uint16_t*>(own);
    for (size_t i = 0; i < n; ++i) acc[i] = bf16_to_float(o[i]);
    for (const void* p : parts) {
      const auto* q = static_cast<const uint16_t*>(p);
      for (size_t i = 0; i < n; ++i) next[i] = bf16_to_float(q[i]);
      fold(acc.data(), next.data(), n, op);
    }
    auto* dst = static_cast<uint16_t*>(out);
    for (size_t i = 0; i < n; ++i) dst[i] = float_to_bf16(acc[i]);
    return;
  }
  if (out != own) std::memmove(out, own, n * dtype_size(dtype));
  for (const void* p : parts) {
    switch (dtype) {
      case DType::F32:
        fold(static_cast<float*>(out), static_cast<const float*>(p), n, op);
        break;
      case DType::I32:
        fold(static_cast<int32_t*>(out), static_cast<const int32_t*>(p), n, op);
        break;
      case DType::I64:
        fold(static_cast<int64_t*>(out), static_cast<const int64_t*>(p), n, op);
        break;
      case DType::U8:
        fold(static_cast<uint8_t*>(out), static_cast<const uint8_t*>(p), n, op);
        break;
      case DType::BF16:
        break;
    }
  }
}

class InProcessCommunicator;

class InProcessWork final : public WorkState {
 public:
  InProcessWork(InProcessCommunicator* comm, std::shared_ptr<Pending> op)
      : comm_(comm), op_(std::move(op)) {}
  bool wait_for(double seconds) override;
  bool done() override { return op_->done; }

 private:
  InProcessCommunicator* comm_;
  std::shared_ptr<Pending> op_;
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<World> world, int rank, std::unique_ptr<SimClock> sim)
      : world_(std::move(world)), rank_(rank), sim_(std::move(sim)) {}

  SimClock* sim_clock() override { return sim_.get(); }

  const char* backend() const override { return "inprocess"; }
  bool sums_in_fixed_order() const override { return true; }
  int rank() const override { return rank_; }
  int size() const override { return world_->ranks(); }
  int local_rank() const override { return rank_; }
  bool device_buffers() const override { return false; }

  // Completes every pending operation up to and including `op`, in issue order; false when a
  // message did not arrive within `seconds` (<= 0: no limit). Rethrows an operation's error.
  bool complete_through(const std::shared_ptr<Pending>& op, double seconds) {
    std::optional<Clock::time_point> deadline;
    if (seconds > 0)
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(seconds));
    while (!op->done) {
      Pending& front = *pending_.front();
      try {
        current_ = &front;
        while (!front.stages.empty()) {
          Stage& s = front.stages.front();
          while (front.got.size() < s.sources.size()) {
            const int from = s.sources[front.got.size()];
            std::optional<Message> m =
                world_->take(from, rank_, s.channel, s.seq, s.stage, deadline);
            if (!m) return false;
            GOSSAMER_CHECK(m->kind == s.kind,
                           "comm inprocess: rank %d expected %s from rank %d, which issued %s "
                           "(every rank must issue the same collectives in the same order)",
                           rank_, kind_name(s.kind), from, kind_name(m->kind));
            front.sim_done = std::max(front.sim_done, m->arrives);
            front.got.push_back(std::move(m->data));
          }
          std::vector<Bytes> got = std::move(front.got);
          front.got.clear();
          auto finish = std::move(s.finish);
          front.stages.pop_front();
          // Messages the stage posts leave when it completed (in simulated time).
          post_at_ = front.sim_done;
          leaves_ = front.sim_done;
          finish(got);  // may add the next stage
          front.sim_done = leaves_;
          post_at_.reset();
          leaves_ = 0;
          for (Bytes& b : got) world_->recycle(std::move(b));
        }
      } catch (const std::exception& e) {
        post_at_.reset();
        leaves_ = 0;
        // MPI's rule: once an operation failed, every later one fails too.
        failed_ = e.what();
        for (auto& p : pending_) p->error = failed_, p->done = true;
        pending_.clear();
        break;
      }
      front.done = true;
      note_completed(front.kind, front.context);
      pending_.pop_front();
    }
    if (!op->error.empty()) throw Error(op->error);
    return true;
  }

  Work all_reduce(void* buf, size_t n, DType dtype, ReduceOp op) override {
    check_buffer(Kind::ALL_REDUCE, buf, n, "buf");
    const int P = size();
    std::vector<size_t> counts(static_cast<size_t>(P));
    for (int r = 0; r < P; ++r) counts[size_t(r)] = n / P + (size_t(r) < n % P ? 1 : 0);
    count_call(stats_, Kind::ALL_REDUCE, all_reduce_bytes(n, dtype, P));
    const size_t es = dtype_size(dtype), at = count_offset(counts, rank_);
    auto* base = static_cast<uint8_t*>(buf);
    // Stage 1, a reduce-scatter into this rank's part of buf; stage 2, an all-gather of it.
    auto gather = [this, base, counts, es, P](std::vector<Bytes>& parts) {
      for (int j = 1; j < P; ++j) {
        const int from = (rank_ + j) % P;
        copy_in(base + count_offset(counts, from) * es, parts[size_t(j - 1)],
                counts[size_t(from)] * es, Kind::ALL_REDUCE, from);
      }
    };
    const uint64_t seq = next_seq_++;
    auto reduce = [this, base, counts, es, at, dtype, op, P, gather,
                   seq](std::vector<Bytes>& parts) {
      reduce_parts(base + at * es, base + at * es, parts, counts[size_t(rank_)], dtype, op);
      for (int j = 1; j < P; ++j)
        post_message((rank_ + j) % P, kCollective, Kind::ALL_REDUCE, seq, 1, base + at * es,
                     counts[size_t(rank_)] * es);
      current_->stages.push_back(collective_stage(Kind::ALL_REDUCE, seq, 1, gather));
    };
    return issue_reduction(Kind::ALL_REDUCE, seq, base, counts, es, n * es, reduce);
  }

  Work reduce_scatter(const void* in, void* out, std::span<const size_t> counts, DType dtype,
                      ReduceOp op) override {
    check_reduce_scatter(in, out, counts, dtype, rank_, size());
    count_call(stats_, Kind::REDUCE_SCATTER, reduce_scatter_bytes(counts, dtype, rank_));
    const size_t es = dtype_size(dtype), at = count_offset(counts, rank_);
    const size_t mine = counts[size_t(rank_)];
    const auto* base = static_cast<const uint8_t*>(in);
    Bytes own(base + at * es, base + (at + mine) * es);  // in may be out: keep this rank's part
    auto reduce = [this, out, own = std::move(own), mine, dtype, op](std::vector<Bytes>& parts) {
      reduce_parts(out, own.data(), parts, mine, dtype, op);
    };
    return issue_reduction(Kind::REDUCE_SCATTER, next_seq_++, base,
                           std::vector<size_t>(counts.begin(), counts.end()), es,
                           count_sum(counts) * es, reduce);
  }

  Work all_gather(const void* in, void* out, std::span<const size_t> counts, DType dtype) override {
    const bool in_place = check_all_gather(in, out, counts, dtype, rank_, size());
    count_call(stats_, Kind::ALL_GATHER, all_gather_bytes(counts, dtype, rank_));
    const int P = size();
    const size_t es = dtype_size(dtype), mine = counts[size_t(rank_)];
    auto* base = static_cast<uint8_t*>(out);
    std::vector<size_t> c(counts.begin(), counts.end());
    if (!in_place && mine > 0) std::memmove(base + count_offset(c, rank_) * es, in, mine * es);
    const uint64_t seq = next_seq_++;
    for (int j = 1; j < P; ++j)
      post_message((rank_ + j) % P, kCollective, Kind::ALL_GATHER, seq, 0, in, mine * es);
    return issue(Kind::ALL_GATHER, count_sum(c) * es,
                 {collective_stage(
                     Kind::ALL_GATHER, seq, 0, [this, base, c, es, P](std::vector<Bytes>& parts) {
                       for (int j = 1; j < P; ++j) {
                         const int from = (rank_ + j) % P;
                         copy_in(base + count_offset(c, from) * es, parts[size_t(j - 1)],
                                 c[size_t(from)] * es, Kind::ALL_GATHER, from);
                       }
                     })});
  }

  Work broadcast(void* buf, size_t n, DType dtype, int root) override {
    check_root(Kind::BROADCAST, root, size());
    check_buffer(Kind::BROADCAST, buf, n, "buf");
    count_call(stats_, Kind::BROADCAST, broadcast_bytes(n, dtype, root, rank_, size()));
    const size_t bytes = n * dtype_size(dtype);
    const uint64_t seq = next_seq_++;
    if (rank_ == root) {
      for (int r = 0; r < size(); ++r)
        if (r != root) post_message(r, kCollective, Kind::BROADCAST, seq, 0, buf, bytes);
      return issue(Kind::BROADCAST, bytes, {});
    }
    return issue(Kind::BROADCAST, bytes,
                 {{{root},
                   kCollective,
                   Kind::BROADCAST,
                   [this, buf, bytes, root](auto& got) {
                     copy_in(buf, got[0], bytes, Kind::BROADCAST, root);
                   },
                   seq,
                   0}});
  }

  Work send(const void* buf, size_t n, DType dtype, int peer) override {
    check_peer(Kind::SEND, peer, rank_, size(), false);
    check_buffer(Kind::SEND, buf, n, "buf");
    count_call(stats_, Kind::SEND, send_bytes(n, dtype));
    post_message(peer, kPointToPoint, Kind::SEND, 0, 0, buf, n * dtype_size(dtype));
    return issue(Kind::SEND, n * dtype_size(dtype), {});
  }

  Work recv(void* buf, size_t n, DType dtype, int peer) override {
    check_peer(Kind::RECV, peer, rank_, size(), false);
    check_buffer(Kind::RECV, buf, n, "buf");
    count_call(stats_, Kind::RECV, recv_bytes(n, dtype));
    const size_t bytes = n * dtype_size(dtype);
    return issue(Kind::RECV, bytes, {receive_stage(peer, [this, buf, bytes, peer](auto& got) {
                   copy_in(buf, got[0], bytes, Kind::RECV, peer);
                 })});
  }

  Work sendrecv(const void* send_buf, size_t send_n, int dest, void* recv_buf, size_t recv_n,
                int source, DType dtype) override {
    check_sendrecv(send_buf, send_n, dest, recv_buf, recv_n, source, dtype, rank_, size());
    count_call(stats_, Kind::SENDRECV, sendrecv_bytes(send_n, dest, recv_n, source, dtype, rank_));
    const size_t es = dtype_size(dtype), bytes = recv_n * es;
    post_message(dest, kPointToPoint, Kind::SEND, 0, 0, send_buf, send_n * es);
    return issue(Kind::SENDRECV, send_n * es,
                 {receive_stage(source, [this, recv_buf, bytes, source](auto& got) {
                   copy_in(recv_buf, got[0], bytes, Kind::SENDRECV, source);
                 })});
  }

  Work sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                     std::span<void* const> recv_bufs, std::span<const int> sources,
                     DType dtype) override {
    const ByteCount b =
        check_sendrecv_many(send_buf, n, dests, recv_bufs, sources, dtype, rank_, size());
    count_call(stats_, Kind::SENDRECV, b);
    const size_t bytes = n * dtype_size(dtype);
    for (int d : dests) post_message(d, kPointToPoint, Kind::SEND, 0, 0, send_buf, bytes);
    std::vector<int> from(sources.begin(), sources.end());
    std::vector<void*> into(recv_bufs.begin(), recv_bufs.end());
    Stage s{from, kPointToPoint, Kind::SEND, [this, from, into, bytes](std::vector<Bytes>& got) {
              for (size_t i = 0; i < from.size(); ++i)
                copy_in(into[i], got[i], bytes, Kind::SENDRECV, from[i]);
            }};
    return issue(Kind::SENDRECV, bytes * dests.size(), {std::move(s)});
  }

  Work all_to_all_v(const void* send, std::span<const size_t> send_counts, void* recv,
                    std::span<const size_t> recv_counts, DType dtype) override {
    check_all_to_all_v(send, send_counts, recv, recv_counts, dtype, rank_, size());
    count_call(stats_, Kind::ALL_TO_ALL, all_to_all_bytes(send_counts, recv_counts, dtype, rank_));
    const int P = size();
    const size_t es = dtype_size(dtype);
    const auto* in = static_cast<const uint8_t*>(send);
    auto* out = static_cast<uint8_t*>(recv);
    std::vector<size_t> rc(recv_counts.begin(), recv_counts.end());
    if (send_counts[size_t(rank_)] > 0)
      std::memcpy(out + count_offset(rc, rank_) * es, in + count_offset(send_counts, rank_) * es,
                  send_counts[size_t(rank_)] * es);
    const uint64_t seq = next_seq_++;
    for (int j = 1; j < P; ++j) {
      const int to = (rank_ + j) % P;
      post_message(to, kCollective, Kind::ALL_TO_ALL, seq, 0,
                   in + count_offset(send_counts, to) * es, send_counts[size_t(to)] * es);
    }
    return issue(Kind::ALL_TO_ALL, count_sum(send_counts) * es,
                 {collective_stage(
                     Kind::ALL_TO_ALL, seq, 0, [this, out, rc, es, P](std::vector<Bytes>& got) {
                       for (int j = 1; j < P; ++j) {
                         const int from = (rank_ + j) % P;
                         copy_in(out + count_offset(rc, from) * es, got[size_t(j - 1)],
                                 rc[size_t(from)] * es, Kind::ALL_TO_ALL, from);
                       }
                     })});
  }

  Work sendrecv_upto(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                     size_t recv_capacity, int source, size_t* received, DType dtype) override {
    check_sendrecv(send_buf, send_n, dest, recv_buf, recv_capacity, source, dtype, rank_, size());
    GOSSAMER_CHECK(received != nullptr, "comm sendrecv_upto: received is null");
    const size_t es = dtype_size(dtype);
    post_message(dest, kPointToPoint, Kind::SEND, 0, 0, send_buf, send_n * es);
    Work w = issue(Kind::SENDRECV, send_n * es,
                   {receive_stage(source, [this, recv_buf, recv_capacity, received, es, source,
                                           dest, send_n, dtype](auto& got) {
                     const size_t n = got[0].size() / es;
                     GOSSAMER_CHECK(n <= recv_capacity,
                                    "comm sendrecv_upto: rank %d received %zu elements from rank "
                                    "%d, more than the %zu it can hold",
                                    rank_, n, source, recv_capacity);
                     if (n > 0) std::memcpy(recv_buf, got[0].data(), n * es);
                     *received = n;
                     count_call(stats_, Kind::SENDRECV,
                                sendrecv_bytes(send_n, dest, n, source, dtype, rank_));
                   })});
    return w;
  }

  void barrier() override {
    count_call(stats_, Kind::BARRIER, {});
    const int P = size();
    const uint64_t seq = next_seq_++;
    for (int j = 1; j < P; ++j)
      post_message((rank_ + j) % P, kCollective, Kind::BARRIER, seq, 0, nullptr, 0);
    issue(Kind::BARRIER, 0, {collective_stage(Kind::BARRIER, seq, 0, [](auto&) {})}).wait();
  }

  // The mpi backend's roll call, read from the world: within a grace period (half the timeout,
  // 0.5-10 s) a rank answers when it waits for a message or is in a roll call itself; a rank
  // that computes, hangs or has ended does not. Same messages as MpiCommunicator::absent_peers.
  std::string absent_peers() override {
    const int P = size();
    if (P < 2) return {};
    world_->update(rank_, [](RankState& s) { s.answering = true; });
    const double grace = std::clamp(timeout_s_ / 2, 0.5, 10.0);
    std::vector<bool> answered(size_t(P), false);
    answered[size_t(rank_)] = true;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(grace));
    std::vector<RankState> seen(static_cast<size_t>(P));
    while (Clock::now() < deadline && std::count(answered.begin(), answered.end(), false) > 0) {
      for (int p = 0; p < P; ++p) {
        seen[size_t(p)] = world_->state(p);
        if (seen[size_t(p)].waiting > 0 || seen[size_t(p)].answering) answered[size_t(p)] = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::vector<int64_t> issued(static_cast<size_t>(P), 0);
    for (int p = 0; p < P; ++p) issued[size_t(p)] = seen[size_t(p)].issued;
    const RankState mine = world_->state(rank_);
    issued[size_t(rank_)] = mine.issued;
    return roll_call_report(rank_, answered, issued, mine.last, grace);
  }

  [[noreturn]] void abort(int exit_code, const std::string& message) override {
    log_error("%s", message.c_str());
    std::fflush(nullptr);
    std::_Exit(exit_code);
  }

 private:
  friend class InProcessWork;

  // Posts a message to rank `to`; with simulated time it carries its arrival, and leaves_ the
  // latest time this operation's messages leave (sent at post_at_ when a stage finishes, else
  // at the rank's clock).
  void post_message(int to, Channel ch, Kind kind, uint64_t seq, int stage, const void* data,
                    size_t bytes) {
    double arrives = 0;
    if (sim_) {
      const SimClock::Transfer t = sim_->send(to, bytes, post_at_);
      leaves_ = std::max(leaves_, t.leaves);
      arrives = t.arrives;
    }
    world_->post(rank_, to, ch, kind, seq, stage, data, bytes, arrives);
  }

  // Sources of a collective's messages, in the order they are taken: rank+1, rank+2, ...
  std::vector<int> ring_from(int P) const {
    std::vector<int> v;
    for (int j = 1; j < P; ++j) v.push_back((rank_ + j) % P);
    return v;
  }

  // Stage `stage` of collective `seq`: one message from every other rank (rank+1, rank+2, ...).
  Stage collective_stage(Kind kind, uint64_t seq, int stage,
                         std::function<void(std::vector<Bytes>&)> finish) const {
    return {ring_from(size()), kCollective, kind, std::move(finish), seq, stage};
  }

  Stage receive_stage(int source, std::function<void(std::vector<Bytes>&)> finish) {
    return {{source}, kPointToPoint, Kind::SEND, std::move(finish)};
  }

  // One message into dst, which must be exactly `bytes` long.
  void copy_in(void* dst, const Bytes& got, size_t bytes, Kind kind, int from) const {
    GOSSAMER_CHECK(got.size() == bytes,
                   "comm %s: rank %d expected %zu bytes from rank %d, received %zu",
                   kind_name(kind), rank_, bytes, from, got.size());
    if (bytes > 0) std::memcpy(dst, got.data(), bytes);
  }

  // parts[j - 1] came from rank + j; summed at this rank in the order own, rank-1, rank-2, ...
  void reduce_parts(void* out, const void* own, std::vector<Bytes>& parts, size_t n, DType dtype,
                    ReduceOp op) const {
    const int P = size();
    const size_t bytes = n * dtype_size(dtype);
    std::vector<const void*> order;
    for (int j = 1; j < P; ++j) {
      const int from = (rank_ - j + P) % P;  // its message is parts[(from - rank - 1) mod P]
      const Bytes& b = parts[size_t((from - rank_ - 1 + P) % P)];
      GOSSAMER_CHECK(b.size() == bytes,
                     "comm reduce: rank %d expected %zu bytes from rank %d, "
                     "received %zu",
                     rank_, bytes, from, b.size());
      order.push_back(b.data());
    }
    reduce_in_order(out, own, order, n, dtype, op);
  }

  // Posts this rank's part p of `base` (counts) to rank p, then expects every rank's part of
  // its own and runs `reduce`.
  Work issue_reduction(Kind kind, uint64_t seq, const uint8_t* base,
                       const std::vector<size_t>& counts, size_t es, size_t bytes,
                       std::function<void(std::vector<Bytes>&)> reduce) {
    const int P = size();
    for (int j = 1; j < P; ++j) {
      const int to = (rank_ + j) % P;
      post_message(to, kCollective, kind, seq, 0, base + count_offset(counts, to) * es,
                   counts[size_t(to)] * es);
    }
    return issue(kind, bytes, {collective_stage(kind, seq, 0, std::move(reduce))});
  }

  void note_completed(Kind kind, const std::string& context) {
    std::string what = context.empty() ? std::string(kind_name(kind))
                                       : strprintf("%s (%s)", kind_name(kind), context.c_str());
    world_->update(rank_, [&](RankState& s) { s.last = std::move(what); });
  }

  Work issue(Kind kind, size_t bytes, std::deque<Stage> stages) {
    GOSSAMER_CHECK(failed_.empty(), "comm inprocess: rank %d: an earlier operation failed: %s",
                   rank_, failed_.c_str());
    auto op = std::make_shared<Pending>();
    op->kind = kind;
    op->context = context_;
    op->stages = std::move(stages);
    if (sim_) op->sim_done = std::max(sim_->now(), leaves_);  // its sends at issue have left
    leaves_ = 0;
    world_->update(rank_, [](RankState& s) { ++s.issued; });
    if (op->stages.empty() && pending_.empty()) {
      op->done = true;  // everything was posted at issue, and nothing is before it
      note_completed(kind, context_);
    } else {
      pending_.push_back(op);
    }
    return Work(std::make_shared<InProcessWork>(this, op), this, kind, bytes);
  }

  std::shared_ptr<World> world_;
  const int rank_;
  std::unique_ptr<SimClock> sim_;  // null: time is not simulated
  std::optional<double> post_at_;  // while a stage finishes: its simulated completion
  double leaves_ = 0;              // see post_message
  std::deque<std::shared_ptr<Pending>> pending_;  // issued, not yet complete, in issue order
  Pending* current_ = nullptr;                    // the operation whose stage is finishing
  uint64_t next_seq_ = 0;                         // the number of the next collective
  std::string failed_;
};

bool InProcessWork::wait_for(double seconds) {
  if (!op_->done && !comm_->complete_through(op_, seconds)) return false;
  if (!op_->error.empty()) throw Error(op_->error);
  if (SimClock* sim = comm_->sim_clock()) sim->wait_until(op_->sim_done);
  return true;
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_inprocess_communicators(
    int ranks, std::shared_ptr<const SimNetwork> network, double compute_scale) {
  GOSSAMER_CHECK(ranks >= 1, "comm inprocess: %d ranks (at least 1)", ranks);
  GOSSAMER_CHECK(!network || network->ranks() == ranks,
                 "comm inprocess: a simulated network of %d ranks for %d ranks",
                 network ? network->ranks() : 0, ranks);
  auto world = std::make_shared<World>(ranks);
  std::vector<std::unique_ptr<Communicator>> v;
  for (int r = 0; r < ranks; ++r)
    v.push_back(std::make_unique<InProcessCommunicator>(
        world, r, network ? std::make_unique<SimClock>(network, r, compute_scale) : nullptr));
  return v;
}

}  // namespace gossamer::comm
