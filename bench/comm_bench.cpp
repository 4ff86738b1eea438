// Implementation of `gossamer bench comm` (comm_bench.h). Per size: warm-up iterations, then
// `iters` timed iterations, each preceded by an untimed barrier and timed from issue to the return
// of wait(); a rank's time is its median, the reported time the slowest rank's. Timed runs use
// zero-filled buffers (same speed as any finite data, no growth under repeated sums); the check
// run fills small integers (exact in fp32 and bf16 whatever the reduction order) and counts
// elements that differ from the expected result bit for bit.
#include "bench/comm_bench.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "bench/collective_harness.h"
#include "comm/communicator.h"
#include "comm/zip/zip_communicator.h"
#include "core/buffer.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#ifdef GOSSAMER_HAVE_NCCL
#include "kernels/cuda/memory.cuh"
#endif

namespace gossamer::bench {

using comm::Communicator;
using comm::DType;
using comm::ReduceOp;
using comm::Work;
#ifdef GOSSAMER_HAVE_NCCL
const MemoryOps& kDeviceMemory = kernels::cuda::kMemory;  // the payloads of --backend nccl
#endif

namespace {

// A payload buffer on the communicator's side, allocated once: host memory (huge-page advised,
// touched at allocation) or device memory.
class BenchBuffer {
 public:
  BenchBuffer(bool device, size_t bytes) : device_(device), bytes_(bytes) {
    if (device_) {
#ifdef GOSSAMER_HAVE_NCCL
      device_ptr_ = kDeviceMemory.alloc(bytes);
#endif
    } else {
      host_ = HostBuffer<uint8_t>(bytes);
    }
  }
  ~BenchBuffer() {
#ifdef GOSSAMER_HAVE_NCCL
    if (device_) kDeviceMemory.free(device_ptr_, bytes_);
#endif
  }
  BenchBuffer(const BenchBuffer&) = delete;
  BenchBuffer& operator=(const BenchBuffer&) = delete;

  void* data() {
    return device_ ? device_ptr_ : host_.data();
  }
  void zero(size_t bytes) {
    if (!device_) {
      std::memset(host_.data(), 0, bytes);
      return;
    }
#ifdef GOSSAMER_HAVE_NCCL
    kDeviceMemory.zero(device_ptr_, bytes);
#endif
  }
  // Host view for filling and checking: the buffer itself, or `staging` copied to / from it.
  uint8_t* host_view(uint8_t* staging) {
    return device_ ? staging : host_.data();
  }
  void upload(const uint8_t* staging, size_t bytes) {
#ifdef GOSSAMER_HAVE_NCCL
    if (device_) kDeviceMemory.upload(device_ptr_, staging, bytes);
#endif
    (void)staging, (void)bytes;
  }
  void download(uint8_t* staging, size_t bytes) {
#ifdef GOSSAMER_HAVE_NCCL
    if (device_) kDeviceMemory.download(staging, device_ptr_, bytes);
#endif
    (void)staging, (void)bytes;
  }

 private:
  bool device_;
  size_t bytes_;
  HostBuffer<uint8_t> host_;
  void* device_ptr_ = nullptr;
};

comm::Kind kind_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::ALL_REDUCE:
      return comm::Kind::ALL_REDUCE;
    case CollectiveOp::REDUCE_SCATTER:
      return comm::Kind::REDUCE_SCATTER;
    case CollectiveOp::ALL_GATHER:
      return comm::Kind::ALL_GATHER;
    case CollectiveOp::BROADCAST:
      return comm::Kind::BROADCAST;
    case CollectiveOp::SENDRECV:
      return comm::Kind::SENDRECV;
    case CollectiveOp::ALL_TO_ALL:
      return comm::Kind::ALL_TO_ALL;
  }
  return comm::Kind::BARRIER;
}

struct Bench {
  Communicator& comm;
  const CommBenchOptions& o;
  DType dtype;
  size_t es;
  int n, rank;
  BenchBuffer a, b;
  HostBuffer<uint8_t> staging;  // device backends only
  BenchBuffer scratch;          // 8 bytes for the per-size reductions of time and #wrong

  Bench(Communicator& c, const CommBenchOptions& opt, DType dt)
      : comm(c),
        o(opt),
        dtype(dt),
        es(comm::dtype_size(dt)),
        n(c.size()),
        rank(c.rank()),
        a(c.device_buffers(), opt.max_bytes),
        b(c.device_buffers(), opt.max_bytes),
        staging(c.device_buffers() ? opt.max_bytes : 0),
        scratch(c.device_buffers(), 8) {}

  Work issue(CollectiveOp op, size_t c, size_t total) {
    const int dest = (rank + 1) % n, source = (rank + n - 1) % n;
    std::vector<size_t> counts(size_t(n), c);
    switch (op) {
      case CollectiveOp::ALL_REDUCE:
        return comm.all_reduce(a.data(), total, dtype, ReduceOp::SUM);
      case CollectiveOp::REDUCE_SCATTER:
        return comm.reduce_scatter(a.data(), b.data(), counts, dtype, ReduceOp::SUM);
      case CollectiveOp::ALL_GATHER:
        return comm.all_gather(a.data(), b.data(), counts, dtype);
      case CollectiveOp::BROADCAST:
        return comm.broadcast(a.data(), total, dtype, 0);
      case CollectiveOp::SENDRECV:
        return comm.sendrecv(a.data(), total, dest, b.data(), total, source, dtype);
      case CollectiveOp::ALL_TO_ALL:
        return comm.all_to_all_v(a.data(), counts, b.data(), counts, dtype);
    }
    return {};
  }

  int64_t reduce_max_or_sum(int64_t v, ReduceOp op) {
    uint8_t* h = scratch.host_view(staging.data());
    std::memcpy(h, &v, 8);
    scratch.upload(h, 8);
    comm.all_reduce(scratch.data(), 1, DType::I64, op).wait();
    scratch.download(h, 8);
    std::memcpy(&v, h, 8);
    return v;
  }

  // Gaussian values (sigma 0.02, fixed seed per rank) in the first n elements of a.
  void fill_gaussian(size_t n_elems) {
    uint8_t* h = a.host_view(staging.data());
    Rng rng(1234, uint64_t(rank));
    for (size_t i = 0; i < n_elems; ++i)
      store_element(h, dtype == DType::BF16, i, float(0.02 * rng.normal()));
    a.upload(h, n_elems * es);
  }

  // Median time of one operation on this rank, in seconds; ratio = raw / wire bytes sent.
  double time(CollectiveOp op, size_t c, size_t total, double& ratio) {
    b.zero(total * es);
    fill_gaussian(total);
    for (int i = 0; i < o.warmup; ++i) issue(op, c, total).wait();
    std::vector<double> t(size_t(o.iters));
    const comm::CommStats before = comm.stats();
    for (double& s : t) {
      comm.barrier();
      Stopwatch watch;
      issue(op, c, total).wait();
      s = watch.seconds();
    }
    const comm::CommStats d = comm.stats().since(before);
    const int64_t raw = d.kinds[size_t(kind_of(op))].raw_bytes_sent,
                  sent = d.kinds[size_t(kind_of(op))].bytes_sent;
    ratio = sent > 0 ? double(raw) / double(sent) : 1.0;
    return median(t);
  }

  // Wrong elements on this rank after one run on check data.
  int64_t check(CollectiveOp op, size_t c, size_t total) {
    const CheckPattern pat(n);
    const bool bf16 = dtype == DType::BF16;
    uint8_t* in = a.host_view(staging.data());
    const size_t first = check_input_first(op, rank, c), in_n = check_input_count(op, c, total);
    for (size_t i = 0; i < in_n; ++i) {
      const bool junk = op == CollectiveOp::BROADCAST && rank != 0;
      store_element(in, bf16, i, junk ? -1.0f : float(pat.value(rank, first + i)));
    }
    a.upload(in, in_n * es);
    issue(op, c, total).wait();
    BenchBuffer& result = op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::BROADCAST ? a : b;
    const size_t out_n = check_output_count(op, c, total);
    uint8_t* out = result.host_view(staging.data());
    result.download(out, out_n * es);
    int64_t wrong = 0;
    for (size_t i = 0; i < out_n; ++i)
      wrong += !element_equals(out, bf16, i, float(check_expected(op, pat, rank, c, i)));
    return wrong;
  }
};

void check_options(const CommBenchOptions& o, std::vector<CollectiveOp>& ops, DType& dtype) {
  GOSSAMER_CHECK(o.dtype == "fp32" || o.dtype == "bf16",
                 "--dtype: expected fp32 or bf16, found '%s'", o.dtype.c_str());
  dtype = o.dtype == "bf16" ? DType::BF16 : DType::F32;
  GOSSAMER_CHECK(!o.ops.empty(), "--ops: expected at least one operation");
  for (const std::string& name : o.ops) {
    const std::optional<CollectiveOp> op = collective_from_name(name);
    GOSSAMER_CHECK(op.has_value(),
                   "--ops: unknown operation '%s' (expected all_reduce, reduce_scatter, "
                   "all_gather, broadcast, sendrecv or all_to_all)",
                   name.c_str());
    ops.push_back(*op);
  }
  GOSSAMER_CHECK(o.min_bytes >= 1, "--min-bytes: must be >= 1");
  GOSSAMER_CHECK(o.max_bytes >= o.min_bytes, "--max-bytes: %zu is below --min-bytes %zu",
                 o.max_bytes, o.min_bytes);
  GOSSAMER_CHECK(o.max_bytes <= (size_t{1} << 36), "--max-bytes: %zu is above 64 GiB", o.max_bytes);
  GOSSAMER_CHECK(o.step_factor >= 2, "--step-factor: must be >= 2, found %d", o.step_factor);
  GOSSAMER_CHECK(o.iters >= 1, "--iters: must be >= 1, found %d", o.iters);
  GOSSAMER_CHECK(o.warmup >= 0, "--warmup: must be >= 0, found %d", o.warmup);
}

}  // namespace

int run_comm_bench(const CommBenchOptions& o) {
  std::vector<CollectiveOp> ops;
  DType dtype = DType::F32;
  check_options(o, ops, dtype);
  std::unique_ptr<comm::Communicator> comm;
  try {
    // nccl moves device buffers (staged from the host here); every other backend host ones,
    // as in CPU training.
    const auto where = o.backend == "nccl" ? comm::BufferLocation::BUFFER_LOCATION_DEVICE
                                           : comm::BufferLocation::BUFFER_LOCATION_HOST;
    comm = comm::make_communicator(o.backend, where);
  } catch (const Error& e) {
    fail("--backend %s: %s", o.backend.c_str(), e.what());
  }
  const auto mode = enum_from_name<comm::zip::Compression>(o.compression);
  GOSSAMER_CHECK(mode.has_value(), "--compression: expected %s, found '%s'",
                 enum_choices<comm::zip::Compression>().c_str(), o.compression.c_str());
  comm::zip::ZipOptions zip;
  zip.mode = *mode;
  zip.min_bytes = o.compression_min_bytes;
  zip.link_gbps = o.link_gbps;
  zip.codec_gbps = o.codec_gbps;
  comm = comm::zip::wrap_with_compression(std::move(comm), zip);
  log_set_rank(comm->rank());
  Bench bench(*comm, o, dtype);
  const int n = comm->size();
  const bool root = comm->rank() == 0;
  if (root) {
    std::printf(
        "# gossamer bench comm: backend %s, %d rank(s), dtype %s, %d iteration(s) after %d "
        "warm-up, check %s, compression %s\n",
        comm->backend(), n, comm::dtype_name(dtype), o.iters, o.warmup, o.check ? "on" : "off",
        o.compression.c_str());
    std::printf("# time: median over iterations (issue to wait() return) of the slowest rank\n");
    print_collective_legend();
  }
  int64_t total_wrong = 0;
  for (CollectiveOp op : ops) {
    if (root) print_collective_header(op);
    size_t last = 0;
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= size_t(o.step_factor)) {
      size_t c = 0, total = 0;
      collective_shape(op, bytes, bench.es, bench.n, c, total);
      if (c == 0 || total == last) continue;  // below one element per rank, or a repeat
      last = total;
      double ratio = 1;
      const double local = bench.time(op, c, total, ratio);
      const double t = double(bench.reduce_max_or_sum(int64_t(local * 1e9), ReduceOp::MAX)) * 1e-9;
      int64_t wrong = -1;
      if (o.check) wrong = bench.reduce_max_or_sum(bench.check(op, c, total), ReduceOp::SUM);
      if (wrong > 0) total_wrong += wrong;
      if (root) {
        print_collective_row(
            op, n,
            {total * comm::dtype_size(dtype), total, comm::dtype_name(dtype), t, ratio, wrong});
        std::fflush(stdout);
      }
    }
  }
  if (total_wrong > 0) {
    log_error("bench comm: %lld wrong element(s) in all (the #wrong columns)",
              (long long)total_wrong);
    return 1;
  }
  return 0;
}

}  // namespace gossamer::bench
