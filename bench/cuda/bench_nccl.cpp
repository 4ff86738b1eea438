// bench_nccl: NCCL's collectives across every GPU of one machine, from one process (no MPI: the
// device machines have none): sum all-reduce, sum reduce-scatter and all-gather, fp32 and bf16,
// 1 to 256 MiB. The 1 and 16 MiB cells first check their result on exactly representable data
// (small integers, exact in bf16 too for up to 17 GPUs) and count the wrong elements (larger
// cells run the same code, timed only: the host's reference is the slow part). Timing as
// nccl-tests: 10 calls back to back, the streams synchronised once, the time per call; the
// median of 5 such batches after 2 warm-up calls; algorithm bandwidth = bytes of the whole
// buffer reduced or gathered / time, bus bandwidth = alg x 2(n-1)/n (all-reduce) or alg x
// (n-1)/n (the others). With fewer than two GPUs it prints SKIPPED and exits 0
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

#include "comm/bf16.h"
#include "core/error.h"
#include "kernels/cuda/cuda_context.cuh"

namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw gossamer::Error(std::string("bench_nccl: ") + what + ": " + ncclGetErrorString(r));
}

enum class Op { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER };
const char* op_name(Op op) {
  return op == Op::ALL_REDUCE       ? "all_reduce"
         : op == Op::REDUCE_SCATTER ? "reduce_scatter"
                                    : "all_gather";
}

// Element i of GPU r's input: a small integer, so every sum is exact in fp32, and in bf16 (8
// significant bits) while it stays at most 256: n(n+1)/2 + 6n for n GPUs, up to 17 GPUs.
constexpr int kExactBf16Gpus = 17;

float input_value(int r, size_t i) {
  return float(r + 1 + int(i % 7));
}

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
  void run(Op op, ncclDataType_t type, size_t count) {
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
      if (op == Op::ALL_REDUCE)
        nccl_check(ncclAllReduce(s, r, count, type, ncclSum, c, st), "ncclAllReduce");
      else if (op == Op::REDUCE_SCATTER)
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

// Uploads every GPU's input (elements of es bytes) and returns the wrong elements of the result.
size_t check(Gpus& g, Op op, bool bf16, size_t count) {
  const size_t es = bf16 ? 2 : 4;
  const size_t in_elems = op == Op::REDUCE_SCATTER ? count * size_t(g.n) : count;
  const size_t out_elems = op == Op::ALL_REDUCE ? count : count * (op == Op::ALL_GATHER ? g.n : 1);
  std::vector<uint8_t> host(std::max(in_elems, out_elems) * es);
  auto put = [&](size_t i, float v) {
    if (bf16) {
      const uint16_t h = gossamer::comm::float_to_bf16(v);
      std::memcpy(host.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(host.data() + 4 * i, &v, 4);
    }
  };
  auto get = [&](size_t i) {
    if (!bf16) {
      float v;
      std::memcpy(&v, host.data() + 4 * i, 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, host.data() + 2 * i, 2);
    return gossamer::comm::bf16_to_float(h);
  };
  for (int d = 0; d < g.n; ++d) {
    for (size_t i = 0; i < in_elems; ++i) put(i, input_value(d, i));
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
    for (size_t i = 0; i < out_elems; ++i) {
      float want = 0;
      if (op == Op::ALL_GATHER) {
        want = input_value(int(i / count), i % count);
      } else {
        const size_t at = op == Op::REDUCE_SCATTER ? size_t(d) * count + i : i;
        for (int r = 0; r < g.n; ++r) want += input_value(r, at);
      }
      wrong += get(i) != want;
    }
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
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
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
    std::printf(
        "| op | dtype | MiB | wrong elements (of <= 16 MiB) | ms | algbw GB/s | busbw GB/s |\n");
    std::printf("|---|---|--:|--:|--:|--:|--:|\n");
    size_t all_wrong = 0;
    for (Op op : {Op::ALL_REDUCE, Op::REDUCE_SCATTER, Op::ALL_GATHER})
      for (bool bf16 : {false, true})
        for (size_t mib : {size_t(1), size_t(16), size_t(64), size_t(256)}) {
          const size_t es = bf16 ? 2 : 4, total = mib << 20;
          // count: elements per GPU's input (all-reduce, all-gather) or output (reduce-scatter);
          // the whole buffer (total bytes) is what the op reduces or gathers.
          const size_t count = op == Op::ALL_REDUCE ? total / es : total / es / size_t(gpus);
          std::string wrong = "-";
          if (total <= kCheckedBytes && (!bf16 || gpus <= kExactBf16Gpus)) {
            const size_t w = check(g, op, bf16, count);
            all_wrong += w;
            wrong = std::to_string(w);
          }
          const double ms =
              median_ms(g, [&] { g.run(op, bf16 ? ncclBfloat16 : ncclFloat32, count); });
          const size_t moved = (op == Op::ALL_REDUCE ? count : count * size_t(gpus)) * es;
          const double alg = double(moved) / (ms * 1e-3) / 1e9;
          const double factor =
              op == Op::ALL_REDUCE ? 2.0 * (gpus - 1) / gpus : double(gpus - 1) / gpus;
          std::printf("| %s | %s | %zu | %s | %.3f | %.1f | %.1f |\n", op_name(op),
                      bf16 ? "bf16" : "fp32", mib, wrong.c_str(), ms, alg, alg * factor);
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
