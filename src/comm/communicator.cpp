// Implementation of the backend-independent parts of communicator.h: names of dtypes, reduce
// operations and collective kinds, CommStats arithmetic and Work::wait() with its timeout.
// Invariant: stats are touched only by the thread that issues and waits on operations (backends'
// worker threads never write them), so they need no lock.
#include "comm/communicator.h"

#include "core/error.h"
#include "core/timer.h"

namespace gossamer::comm {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 4;
    case DType::BF16:
      return 2;
    case DType::I32:
      return 4;
    case DType::I64:
      return 8;
    case DType::U8:
      return 1;
  }
  fail("comm: unknown dtype %d", int(dtype));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "fp32";
    case DType::BF16:
      return "bf16";
    case DType::I32:
      return "int32";
    case DType::I64:
      return "int64";
    case DType::U8:
      return "uint8";
  }
  return "unknown";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return "sum";
    case ReduceOp::MAX:
      return "max";
    case ReduceOp::MIN:
      return "min";
  }
  return "unknown";
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::ALL_REDUCE:
      return "all_reduce";
    case Kind::REDUCE_SCATTER:
      return "reduce_scatter";
    case Kind::ALL_GATHER:
      return "all_gather";
    case Kind::BROADCAST:
      return "broadcast";
    case Kind::SEND:
      return "send";
    case Kind::RECV:
      return "recv";
    case Kind::SENDRECV:
      return "sendrecv";
    case Kind::BARRIER:
      return "barrier";
    case Kind::ALL_TO_ALL:
      return "all_to_all";
  }
  return "unknown";
}

int64_t CommStats::bytes_sent() const {
  int64_t total = 0;
  for (const KindStats& k : kinds) total += k.bytes_sent;
  return total;
}

int64_t CommStats::bytes_received() const {
  int64_t total = 0;
  for (const KindStats& k : kinds) total += k.bytes_received;
  return total;
}

double CommStats::seconds_waited() const {
  double total = 0;
  for (const KindStats& k : kinds) total += k.seconds_waited;
  return total;
}

namespace {

// Element-wise a + sign * b.
CommStats combine(const CommStats& a, const CommStats& b, int sign) {
  CommStats d;
  for (int i = 0; i < kNumKinds; ++i) {
    const KindStats &x = a.kinds[i], &y = b.kinds[i];
    d.kinds[i].calls = x.calls + sign * y.calls;
    d.kinds[i].bytes_sent = x.bytes_sent + sign * y.bytes_sent;
    d.kinds[i].bytes_received = x.bytes_received + sign * y.bytes_received;
    d.kinds[i].seconds_waited = x.seconds_waited + sign * y.seconds_waited;
    d.kinds[i].raw_bytes_sent = x.raw_bytes_sent + sign * y.raw_bytes_sent;
    d.kinds[i].compressed_calls = x.compressed_calls + sign * y.compressed_calls;
  }
  return d;
}

}  // namespace

CommStats CommStats::since(const CommStats& earlier) const {
  return combine(*this, earlier, -1);
}

CommStats CommStats::plus(const CommStats& other) const {
  return combine(*this, other, +1);
}

std::string roll_call_report(int rank, const std::vector<bool>& answered,
                             const std::vector<int64_t>& issued, const std::string& last,
                             double grace_s) {
  std::string absent, elsewhere;
  int num_absent = 0;
  const int64_t mine = issued[size_t(rank)];
  for (size_t p = 0; p < answered.size(); ++p) {
    if (!answered[p])
      absent += strprintf("%s%zu", num_absent++ ? ", " : "", p);
    else if (int(p) != rank && issued[p] != mine)
      elsewhere += strprintf("; rank %zu waits in its operation #%lld, this rank in #%lld", p,
                             (long long)issued[p], (long long)mine);
  }
  if (num_absent == 0)
    return "every rank answered a roll call, so none is stopped or dead" +
           (elsewhere.empty() ? std::string(": all wait in the same operation (a very slow "
                                            "link? raise parallel.timeout_s)")
                              : elsewhere + " (the ranks issued different operations)");
  const std::string seen = last.empty() ? std::string("no operation had completed on this rank")
                                        : "the last operation completed on this rank was " + last;
  return strprintf("rank%s %s did not answer a roll call within %g s (stopped, hung or dead); %s%s",
                   num_absent > 1 ? "s" : "", absent.c_str(), grace_s, seen.c_str(),
                   elsewhere.c_str());
}

void Work::wait() {
  if (!state_) return;
  const double limit = comm_ ? comm_->timeout() : 0;
  Stopwatch watch;
  bool completed = false;
  try {
    completed = state_->wait_for(limit);
  } catch (...) {
    if (comm_) comm_->mutable_stats()[kind_].seconds_waited += watch.seconds();
    throw;
  }
  if (comm_) comm_->mutable_stats()[kind_].seconds_waited += watch.seconds();
  if (completed) {
    if (comm_) comm_->settle_stats();
    return;
  }
  const std::string context =
      comm_->context().empty() ? std::string() : strprintf(" (%s)", comm_->context().c_str());
  std::string absent = comm_->absent_peers();
  if (absent.empty()) absent = "a peer rank died or hangs";
  comm_->abort(
      kExitPeerFailure,
      strprintf("rank %d: %s of %zu bytes did not complete within %g s%s; %s", comm_->rank(),
                kind_name(kind_), bytes_, limit, context.c_str(), absent.c_str()));
}

Work Communicator::sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                                 std::span<void* const> recv_bufs, std::span<const int> sources,
                                 DType dtype) {
  GOSSAMER_CHECK(dests.size() == sources.size() && recv_bufs.size() == sources.size(),
                 "comm sendrecv_many: %zu destinations, %zu sources, %zu receive buffers",
                 dests.size(), sources.size(), recv_bufs.size());
  Work last;
  for (size_t i = 0; i < dests.size(); ++i)
    last = sendrecv(send_buf, n, dests[i], recv_bufs[i], n, sources[i], dtype);
  if (dests.size() > 1) stats_[Kind::SENDRECV].calls -= int64_t(dests.size() - 1);  // one call
  return last;  // operations complete in issue order
}

}  // namespace gossamer::comm
