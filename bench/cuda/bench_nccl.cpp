// bench_nccl: NCCL's collectives across every GPU of one machine, from one process (no MPI: the
// device machines have none): sum all-reduce, sum reduce-scatter and all-gather, fp32 and bf16,
// 1 to 256 MiB, one table per collective with `gossamer bench comm`'s columns and check data
// (bench/collective_harness.h). The 1 and 16 MiB cells first check their result on exactly
// representable data and count the wrong elements (larger cells run the same code, timed only:
// the host's reference is the slow part). Timing as nccl-tests: 10 calls back to back, the
// streams synchronised once, the time per call; the median of 5 such batches after 2 warm-up
// calls. With fewer than two GPUs it prints SKIPPED and exits 0
// (scripts/gpu-check.sh runs it). Exit status 1 if any element was wrong or a call failed.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/collective_harness.h"
#include "core/error.h"
#include "core/median.h"
#include "kernels/cuda/cuda_context.cuh"

namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw gossamer::Error(std::string("bench_nccl: ") + what + ": " + ncclGetErrorString(r));
}

using gossamer::median;
using gossamer::bench::CollectiveOp;
namespace harness = gossamer::bench;

struct Gpus {
  int n = 0;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<void*> send, recv;
  size_t bytes = 0;  // of each send and recv buffer
  bool failed = false;

  Gpus(int count, size_t buffer_bytes) : n(count), comms(size_t(count)), bytes(buffer_bytes) {
    std::vector<int> devices(static_cast<size_t>(count));
    for (int d = 0; d < n; ++d) devices[size_t(d)] = d;
    nccl_check(ncclCommInitAll(comms.data(), n, devices.data()), "ncclCommInitAll");
    for (int d = 0; d < n; ++d) {
      GOSSAMER_CUDA_CHECK(cudaSetDevice(d));
      cudaStream_t s;
      GOSSAMER_CUDA_CHECK(cudaStreamCreate(&s));
      streams.push_back(s);
      void* a = nullptr;
      void* b = nullptr;
      GOSSAMER_CUDA_CHECK(cudaMalloc(&a, bytes));
      GOSSAMER_CUDA_CHECK(cudaMalloc(&b, bytes));
      send.push_back(a);
      recv.push_back(b);
    }
  }
  ~Gpus() {
    for (int d = 0; d < n; ++d) {
      cudaSetDevice(d);
      cudaFree(send[size_t(d)]);
      cudaFree(recv[size_t(d)]);
      cudaStreamDestroy(streams[size_t(d)]);
      if (failed)
        ncclCommAbort(comms[size_t(d)]);
      else
        ncclCommDestroy(comms[size_t(d)]);
    }
  }
  void sync() {
    for (int d = 0; d < n; ++d) {
      GOSSAMER_CUDA_CHECK(cudaSetDevice(d));
      GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(streams[size_t(d)]));
    }
  }
  // One collective on every GPU: count elements per GPU's input (all-reduce, all-gather) or
  // per GPU's output (reduce-scatter). A failed call still closes the group, and the
  // communicators are then aborted, not destroyed (work may be in flight).
  void run(CollectiveOp op, ncclDataType_t type, size_t count) {
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    struct GroupEnd {
      Gpus& g;
      bool ended = false;
      ~GroupEnd() {
        if (!ended) ncclGroupEnd(), g.failed = true;
      }
    } group{*this};
    for (int d = 0; d < n; ++d) {
      void* s = send[size_t(d)];
      void* r = recv[size_t(d)];
      const ncclComm_t c = comms[size_t(d)];
      cudaStream_t st = streams[size_t(d)];
      if (op == CollectiveOp::ALL_REDUCE)
        nccl_check(ncclAllReduce(s, r, count, type, ncclSum, c, st), "ncclAllReduce");
      else if (op == CollectiveOp::REDUCE_SCATTER)
        nccl_check(ncclReduceScatter(s, r, count, type, ncclSum, c, st), "ncclReduceScatter");
      else
        nccl_check(ncclAllGather(s, r, count, type, c, st), "ncclAllGather");
    }
    group.ended = true;
    const ncclResult_t end = ncclGroupEnd();
    if (end != ncclSuccess) failed = true;
    nccl_check(end, "ncclGroupEnd");
  }
};

// Uploads every GPU's check input and returns the wrong elements of the results. count:
// elements of each GPU's part (reduce-scatter's output, all-gather's input) or of the payload.
size_t check(Gpus& g, CollectiveOp op, bool bf16, size_t count) {
  const size_t es = bf16 ? 2 : 4;
  const bool split = op != CollectiveOp::ALL_REDUCE;
  const size_t part = split ? count : count / size_t(g.n), total = split ? count * g.n : count;
  const harness::CheckPattern pattern(g.n);
  const size_t in_elems = harness::check_input_count(op, part, total),
               out_elems = harness::check_output_count(op, part, total);
  std::vector<uint8_t> host(std::max(in_elems, out_elems) * es);
  for (int d = 0; d < g.n; ++d) {
    const size_t first = harness::check_input_first(op, d, part);
    for (size_t i = 0; i < in_elems; ++i)
      harness::store_element(host.data(), bf16, i, float(pattern.value(d, first + i)));
    GOSSAMER_CUDA_CHECK(cudaSetDevice(d));
    GOSSAMER_CUDA_CHECK(
        cudaMemcpy(g.send[size_t(d)], host.data(), in_elems * es, cudaMemcpyHostToDevice));
    GOSSAMER_CUDA_CHECK(cudaMemset(g.recv[size_t(d)], 0xff, out_elems * es));
  }
  g.run(op, bf16 ? ncclBfloat16 : ncclFloat32, count);
  g.sync();
  size_t wrong = 0;
  for (int d = 0; d < g.n; ++d) {
    GOSSAMER_CUDA_CHECK(cudaSetDevice(d));
    GOSSAMER_CUDA_CHECK(
        cudaMemcpy(host.data(), g.recv[size_t(d)], out_elems * es, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < out_elems; ++i)
      wrong += !harness::element_equals(host.data(), bf16, i,
                                        float(harness::check_expected(op, pattern, d, part, i)));
  }
  return wrong;
}

constexpr size_t kCheckedBytes = size_t{16} << 20;

// Median over 5 batches of the time per call of 10 calls back to back (one synchronisation per
// batch), after 2 warm-up calls.
double median_ms(Gpus& g, const std::function<void()>& call) {
  for (int i = 0; i < 2; ++i) call();
  g.sync();
  std::vector<double> ms;
  for (int batch = 0; batch < 5; ++batch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) call();
    g.sync();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        10.0);
  }
  return median(ms);
}

}  // namespace

int main() {
  const int gpus = gossamer::kernels::cuda::visible_gpus();
  if (gpus < 2) {
    std::printf("bench_nccl: SKIPPED (%d GPU(s) visible: NCCL collectives need at least 2)\n",
                gpus);
    return 0;
  }
  try {
    int version = 0;
    nccl_check(ncclGetVersion(&version), "ncclGetVersion");
    const size_t max_bytes = size_t{256} << 20;
    Gpus g(gpus, max_bytes);
    std::printf(
        "# bench_nccl: %d GPUs, NCCL %d, one process (ncclCommInitAll); time per call: median "
        "of 5 batches of 10 calls after 2 warm-ups; wrong elements checked at 1 and 16 MiB\n",
        gpus, version);
    harness::print_collective_legend();
    size_t all_wrong = 0;
    for (CollectiveOp op :
         {CollectiveOp::ALL_REDUCE, CollectiveOp::REDUCE_SCATTER, CollectiveOp::ALL_GATHER}) {
      harness::print_collective_header(op);
      for (bool bf16 : {false, true})
        for (size_t mib : {size_t(1), size_t(16), size_t(64), size_t(256)}) {
          const size_t es = bf16 ? 2 : 4;
          size_t part = 0, total = 0;
          harness::collective_shape(op, mib << 20, es, gpus, part, total);
          // NCCL's count: elements of the payload (all-reduce) or of each GPU's part.
          const size_t count = op == CollectiveOp::ALL_REDUCE ? total : part;
          int64_t wrong = -1;
          if ((mib << 20) <= kCheckedBytes) {
            wrong = int64_t(check(g, op, bf16, count));
            all_wrong += size_t(wrong);
          }
          const double ms =
              median_ms(g, [&] { g.run(op, bf16 ? ncclBfloat16 : ncclFloat32, count); });
          harness::print_collective_row(
              op, gpus, {total * es, total, bf16 ? "bf16" : "fp32", ms * 1e-3, 1.0, wrong});
          std::fflush(stdout);
        }
    }
    if (all_wrong) {
      std::fprintf(stderr, "bench_nccl: %zu wrong elements\n", all_wrong);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
