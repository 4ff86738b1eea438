// Implementation of the nccl backend (nccl_communicator.h). reduce_scatter / all_gather with
// equal counts map to ncclReduceScatter / ncclAllGather; unequal counts to one grouped
// ncclReduce / ncclBroadcast per rank's part (rooted at that rank); all_to_all_v to one grouped
// ncclSend / ncclRecv per peer and a device copy of the own part. barrier() is a one-element
// all-reduce on the comm stream, waited on with the timeout. Works poll their event (and NCCL's
// asynchronous error) so that a hung peer is caught by Work::wait()'s timeout.
#include "comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "comm/byte_accounting.h"
#include "comm/mpi_runtime.h"
#include "comm/op_args.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "kernels/cuda/cuda_context.cuh"

namespace gossamer::comm {

namespace {

// One generator for the status checks of the three libraries (ggml's CHECK_GEN).
template <class Status, class ToString>
void check_status(Status status, Status ok, ToString to_string, const char* what) {
  if (status != ok) fail("comm nccl: %s: %s", what, to_string(status));
}
void cuda_check(cudaError_t e, const char* what) {
  check_status(e, cudaSuccess, cudaGetErrorString, what);
}
void nccl_check(ncclResult_t r, const char* what) {
  check_status(r, ncclSuccess, ncclGetErrorString, what);
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return ncclFloat32;
    case DType::BF16:
      return ncclBfloat16;
    case DType::I32:
      return ncclInt32;
    case DType::I64:
      return ncclInt64;
    case DType::U8:
      return ncclUint8;
  }
  fail("comm nccl: unknown dtype %d", int(dtype));
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return ncclSum;
    case ReduceOp::MAX:
      return ncclMax;
    case ReduceOp::MIN:
      return ncclMin;
  }
  fail("comm nccl: unknown reduce op %d", int(op));
}

char* at(void* p, size_t i, size_t size) {
  return static_cast<char*>(p) + i * size;
}
const char* at(const void* p, size_t i, size_t size) {
  return static_cast<const char*>(p) + i * size;
}

class NcclWork final : public WorkState {
 public:
  NcclWork(cudaEvent_t event, ncclComm_t comm) : event_(event), comm_(comm) {}
  ~NcclWork() override { cudaEventDestroy(event_); }

  bool wait_for(double seconds) override {
    Stopwatch watch;
    for (;;) {
      const cudaError_t e = cudaEventQuery(event_);
      if (e == cudaSuccess) return true;
      if (e != cudaErrorNotReady) cuda_check(e, "cudaEventQuery");
      ncclResult_t async = ncclSuccess;
      nccl_check(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
      if (async != ncclSuccess && async != ncclInProgress)
        fail("comm nccl: operation failed: %s", ncclGetErrorString(async));
      if (seconds > 0 && watch.seconds() > seconds) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  bool done() override { return cudaEventQuery(event_) == cudaSuccess; }

 private:
  cudaEvent_t event_;
  ncclComm_t comm_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator() : runtime_(MpiRuntime::acquire()) {
    const int gpus = kernels::cuda::visible_gpus();
    GOSSAMER_CHECK(gpus > 0, "comm nccl: no GPU is visible (cudaGetDeviceCount)");
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &mpi_comm_), "comm nccl: MPI_Comm_dup");
    MPI_Comm_rank(mpi_comm_, &rank_);
    MPI_Comm_size(mpi_comm_, &size_);
    MPI_Comm node = MPI_COMM_NULL;
    mpi_check(MPI_Comm_split_type(mpi_comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
              "comm nccl: MPI_Comm_split_type");
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_free(&node);
    GOSSAMER_CHECK(local_rank_ < gpus,
                   "comm nccl: rank %d is local rank %d on its node but only %d GPU(s) are "
                   "visible; start at most one rank per GPU",
                   rank_, local_rank_, gpus);
    device_ = local_rank_;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id{};
    if (rank_ == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    mpi_check(MPI_Bcast(&id, int(sizeof id), MPI_BYTE, 0, mpi_comm_),
              "comm nccl: MPI_Bcast(ncclUniqueId)");
    nccl_check(ncclCommInitRank(&nccl_, size_, id, rank_), "ncclCommInitRank");
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreateWithFlags(&order_, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaMalloc(&scratch_, sizeof(int32_t)), "cudaMalloc (barrier scratch)");
  }

  // Waits for the comm stream (aborting the job past the timeout, as Work::wait() does), then
  // releases NCCL, CUDA and MPI resources.
  ~NcclCommunicator() override {
    if (kernels::cuda::visible_gpus() > 0) {
      cudaSetDevice(device_);
      cudaEvent_t drained = nullptr;
      if (cudaEventCreateWithFlags(&drained, cudaEventDisableTiming) == cudaSuccess) {
        NcclWork work(drained, nccl_);  // owns the event
        bool done = true;
        try {
          done = cudaEventRecord(drained, stream_) != cudaSuccess || work.wait_for(timeout_s_);
        } catch (const Error& e) {
          log_error("rank %d: %s", rank_, e.what());
        }
        if (!done) {
          const std::string context =
              context_.empty() ? std::string() : strprintf(" (%s)", context_.c_str());
          abort(kExitPeerFailure,
                strprintf("rank %d: operations still pending at shutdown after %g s%s; a peer "
                          "rank died or hangs",
                          rank_, timeout_s_, context.c_str()));
        }
      }
      cudaStreamSynchronize(stream_);
      ncclCommDestroy(nccl_);
      cudaFree(scratch_);
      cudaEventDestroy(order_);
      cudaStreamDestroy(stream_);
    }
    MPI_Comm_free(&mpi_comm_);
  }

  const char* backend() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  bool device_buffers() const override { return true; }

  void set_compute_stream(cudaStream_t stream) { compute_ = stream; }

  Work all_reduce(void* buf, size_t n, DType dtype, ReduceOp op) override {
    check_buffer(Kind::ALL_REDUCE, buf, n, "buf");
    count_call(stats_, Kind::ALL_REDUCE, all_reduce_bytes(n, dtype, size_));
    return launch(Kind::ALL_REDUCE, n * dtype_size(dtype), [&] {
      if (n > 0)
        nccl_check(ncclAllReduce(buf, buf, n, nccl_type(dtype), nccl_op(op), nccl_, stream_),
                   "ncclAllReduce");
    });
  }

  Work reduce_scatter(const void* in, void* out, std::span<const size_t> counts, DType dtype,
                      ReduceOp op) override {
    check_reduce_scatter(in, out, counts, dtype, rank_, size_);
    count_call(stats_, Kind::REDUCE_SCATTER, reduce_scatter_bytes(counts, dtype, rank_));
    const size_t es = dtype_size(dtype), total = count_sum(counts);
    return launch(Kind::REDUCE_SCATTER, total * es, [&] {
      if (total == 0) return;
      if (equal(counts)) {
        nccl_check(
            ncclReduceScatter(in, out, counts[0], nccl_type(dtype), nccl_op(op), nccl_, stream_),
            "ncclReduceScatter");
        return;
      }
      nccl_check(ncclGroupStart(), "ncclGroupStart");
      size_t part = 0;
      for (int r = 0; r < size_; ++r) {
        const size_t c = counts[size_t(r)];
        if (c > 0)
          // recvbuff matters on the root only; elsewhere pass a valid pointer all the same.
          nccl_check(
              ncclReduce(at(in, part, es), r == rank_ ? out : const_cast<char*>(at(in, part, es)),
                         c, nccl_type(dtype), nccl_op(op), r, nccl_, stream_),
              "ncclReduce");
        part += c;
      }
      nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    });
  }

  Work all_gather(const void* in, void* out, std::span<const size_t> counts, DType dtype) override {
    check_all_gather(in, out, counts, dtype, rank_, size_);
    count_call(stats_, Kind::ALL_GATHER, all_gather_bytes(counts, dtype, rank_));
    const size_t es = dtype_size(dtype), total = count_sum(counts);
    return launch(Kind::ALL_GATHER, total * es, [&] {
      if (total == 0) return;
      if (equal(counts)) {
        nccl_check(ncclAllGather(in, out, counts[0], nccl_type(dtype), nccl_, stream_),
                   "ncclAllGather");
        return;
      }
      nccl_check(ncclGroupStart(), "ncclGroupStart");
      size_t part = 0;
      for (int r = 0; r < size_; ++r) {
        const size_t c = counts[size_t(r)];
        if (c > 0)
          nccl_check(ncclBroadcast(r == rank_ ? in : at(out, part, es), at(out, part, es), c,
                                   nccl_type(dtype), r, nccl_, stream_),
                     "ncclBroadcast");
        part += c;
      }
      nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    });
  }

  Work broadcast(void* buf, size_t n, DType dtype, int root) override {
    check_root(Kind::BROADCAST, root, size_);
    check_buffer(Kind::BROADCAST, buf, n, "buf");
    count_call(stats_, Kind::BROADCAST, broadcast_bytes(n, dtype, root, rank_, size_));
    return launch(Kind::BROADCAST, n * dtype_size(dtype), [&] {
      if (n > 0)
        nccl_check(ncclBroadcast(buf, buf, n, nccl_type(dtype), root, nccl_, stream_),
                   "ncclBroadcast");
    });
  }

  Work send(const void* buf, size_t n, DType dtype, int peer) override {
    check_peer(Kind::SEND, peer, rank_, size_, false);
    check_buffer(Kind::SEND, buf, n, "buf");
    count_call(stats_, Kind::SEND, send_bytes(n, dtype));
    return launch(Kind::SEND, n * dtype_size(dtype), [&] {
      nccl_check(ncclSend(buf, n, nccl_type(dtype), peer, nccl_, stream_), "ncclSend");
    });
  }

  Work recv(void* buf, size_t n, DType dtype, int peer) override {
    check_peer(Kind::RECV, peer, rank_, size_, false);
    check_buffer(Kind::RECV, buf, n, "buf");
    count_call(stats_, Kind::RECV, recv_bytes(n, dtype));
    return launch(Kind::RECV, n * dtype_size(dtype), [&] {
      nccl_check(ncclRecv(buf, n, nccl_type(dtype), peer, nccl_, stream_), "ncclRecv");
    });
  }

  Work sendrecv(const void* send_buf, size_t send_n, int dest, void* recv_buf, size_t recv_n,
                int source, DType dtype) override {
    check_sendrecv(send_buf, send_n, dest, recv_buf, recv_n, source, dtype, rank_, size_);
    count_call(stats_, Kind::SENDRECV, sendrecv_bytes(send_n, dest, recv_n, source, dtype, rank_));
    return launch(Kind::SENDRECV, (send_n + recv_n) * dtype_size(dtype), [&] {
      nccl_check(ncclGroupStart(), "ncclGroupStart");
      nccl_check(ncclSend(send_buf, send_n, nccl_type(dtype), dest, nccl_, stream_), "ncclSend");
      nccl_check(ncclRecv(recv_buf, recv_n, nccl_type(dtype), source, nccl_, stream_), "ncclRecv");
      nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    });
  }

  // Every transfer in one group of ncclSend / ncclRecv: a late peer delays only the exchanges
  // with it (NCCL matches sends and receives per peer), counted as one call.
  Work sendrecv_many(const void* send_buf, size_t n, std::span<const int> dests,
                     std::span<void* const> recv_bufs, std::span<const int> sources,
                     DType dtype) override {
    count_call(stats_, Kind::SENDRECV,
               check_sendrecv_many(send_buf, n, dests, recv_bufs, sources, dtype, rank_, size_));
    return launch(Kind::SENDRECV, n * (dests.size() + sources.size()) * dtype_size(dtype), [&] {
      nccl_check(ncclGroupStart(), "ncclGroupStart");
      for (int d : dests)
        nccl_check(ncclSend(send_buf, n, nccl_type(dtype), d, nccl_, stream_), "ncclSend");
      for (size_t s = 0; s < sources.size(); ++s)
        nccl_check(ncclRecv(recv_bufs[s], n, nccl_type(dtype), sources[s], nccl_, stream_),
                   "ncclRecv");
      nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    });
  }

  // The part for oneself is a device-to-device copy on the comm stream, then one group of
  // ncclSend / ncclRecv with every peer (zero counts skipped).
  Work all_to_all_v(const void* send, std::span<const size_t> send_counts, void* recv,
                    std::span<const size_t> recv_counts, DType dtype) override {
    check_all_to_all_v(send, send_counts, recv, recv_counts, dtype, rank_, size_);
    count_call(stats_, Kind::ALL_TO_ALL, all_to_all_bytes(send_counts, recv_counts, dtype, rank_));
    const size_t es = dtype_size(dtype);
    const size_t payload = (count_sum(send_counts) + count_sum(recv_counts)) * es;
    return launch(Kind::ALL_TO_ALL, payload, [&] {
      const size_t mine = send_counts[size_t(rank_)];
      if (mine > 0)
        cuda_check(cudaMemcpyAsync(at(recv, count_offset(recv_counts, rank_), es),
                                   at(send, count_offset(send_counts, rank_), es), mine * es,
                                   cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpyAsync (all_to_all, own part)");
      nccl_check(ncclGroupStart(), "ncclGroupStart");
      size_t send_off = 0, recv_off = 0;
      for (int r = 0; r < size_; ++r) {
        const size_t s = send_counts[size_t(r)], c = recv_counts[size_t(r)];
        if (r != rank_ && s > 0)
          nccl_check(ncclSend(at(send, send_off, es), s, nccl_type(dtype), r, nccl_, stream_),
                     "ncclSend (all_to_all)");
        if (r != rank_ && c > 0)
          nccl_check(ncclRecv(at(recv, recv_off, es), c, nccl_type(dtype), r, nccl_, stream_),
                     "ncclRecv (all_to_all)");
        send_off += s, recv_off += c;
      }
      nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    });
  }

  // NCCL's receives need the sender's exact count; the zip decorator, the one caller, runs over
  // host backends.
  Work sendrecv_upto(const void*, size_t, int, void*, size_t, int, size_t*, DType) override {
    throw Error(
        "comm nccl: sendrecv_upto is not supported (NCCL's receives need the sender's count; it "
        "serves the zip decorator, which runs over the host backends)");
  }

  void barrier() override {
    count_call(stats_, Kind::BARRIER, {});
    launch(Kind::BARRIER, 0, [&] {
      nccl_check(ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, nccl_, stream_),
                 "ncclAllReduce (barrier)");
    }).wait();
  }

  [[noreturn]] void abort(int exit_code, const std::string& message) override {
    mpi_abort_job(MPI_COMM_WORLD, rank_, exit_code, message);
  }

 private:
  static bool equal(std::span<const size_t> counts) {
    for (size_t c : counts)
      if (c != counts[0]) return false;
    return true;
  }

  // Orders the operation after the compute stream's work, enqueues it on the comm stream and
  // returns a Work completing with an event recorded after it.
  template <class Enqueue>
  Work launch(Kind kind, size_t bytes, Enqueue&& enqueue) {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    cuda_check(cudaEventRecord(order_, compute_), "cudaEventRecord (compute stream)");
    cuda_check(cudaStreamWaitEvent(stream_, order_, 0), "cudaStreamWaitEvent");
    enqueue();
    cudaEvent_t done = nullptr;
    cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    const cudaError_t e = cudaEventRecord(done, stream_);
    if (e != cudaSuccess) cudaEventDestroy(done);
    cuda_check(e, "cudaEventRecord (comm stream)");
    return Work(std::make_shared<NcclWork>(done, nccl_), this, kind, bytes);
  }

  std::shared_ptr<MpiRuntime> runtime_;
  MPI_Comm mpi_comm_ = MPI_COMM_NULL;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaStream_t compute_ = cudaStreamLegacy;
  cudaEvent_t order_ = nullptr;
  int32_t* scratch_ = nullptr;
  int rank_ = 0, size_ = 1, local_rank_ = 0, device_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator() {
  return std::make_unique<NcclCommunicator>();
}

void nccl_set_compute_stream(Communicator& comm, void* stream) {
  auto* nccl = dynamic_cast<NcclCommunicator*>(&comm);
  GOSSAMER_CHECK(nccl != nullptr, "comm: nccl_set_compute_stream on a %s communicator",
                 comm.backend());
  nccl->set_compute_stream(static_cast<cudaStream_t>(stream));
}

}  // namespace gossamer::comm
