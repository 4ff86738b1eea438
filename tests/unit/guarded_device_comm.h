// A "guarded device" communicator, the collective-side twin of guarded_device_ops.h: it stands
// where NCCL stands in a run whose buffers live in device memory at several ranks, and moves
// them with a host communicator (MPI in the tests) while the guarded regions are open. Every
// buffer it is given must lie in a guarded allocation (a host pointer here is an illegal address
// for NCCL), so control values sent through it by mistake are caught (exit kHostTouchExitCode);
// buffers sent through the host communicator by mistake fault in MPI's copy of them (the
// regions are closed then). Operations complete before they return (no overlap with the ops);
// the results are the inner communicator's, bit for bit, and its traffic is counted here, as
// NCCL's would be. Test code; header-only; single-threaded callers.
#pragma once

#include <cstdlib>
#include <memory>
#include <span>
#include <string>

#include "comm/communicator.h"
#include "core/error.h"
#include "guarded_device_ops.h"

namespace gossamer::testing {

class GuardedDeviceComm final : public comm::Communicator {
 public:
  explicit GuardedDeviceComm(comm::Communicator& inner) : inner_(inner) {}

  const char* backend() const override { return "guarded-device"; }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int local_rank() const override { return inner_.local_rank(); }
  bool device_buffers() const override { return true; }

  comm::Work all_reduce(void* buf, size_t n, comm::DType dtype, comm::ReduceOp op) override {
    device(buf, "all_reduce");
    return run([&] { return inner_.all_reduce(buf, n, dtype, op); });
  }
  comm::Work reduce_scatter(const void* in, void* out, std::span<const size_t> counts,
                            comm::DType dtype, comm::ReduceOp op) override {
    device(in, "reduce_scatter (in)");
    device(out, "reduce_scatter (out)");
    return run([&] { return inner_.reduce_scatter(in, out, counts, dtype, op); });
  }
  comm::Work all_gather(const void* in, void* out, std::span<const size_t> counts,
                        comm::DType dtype) override {
    device(in, "all_gather (in)");
    device(out, "all_gather (out)");
    return run([&] { return inner_.all_gather(in, out, counts, dtype); });
  }
  comm::Work broadcast(void* buf, size_t n, comm::DType dtype, int root) override {
    device(buf, "broadcast");
    return run([&] { return inner_.broadcast(buf, n, dtype, root); });
  }
  comm::Work send(const void* buf, size_t n, comm::DType dtype, int peer) override {
    device(buf, "send");
    return run([&] { return inner_.send(buf, n, dtype, peer); });
  }
  comm::Work recv(void* buf, size_t n, comm::DType dtype, int peer) override {
    device(buf, "recv");
    return run([&] { return inner_.recv(buf, n, dtype, peer); });
  }
  comm::Work sendrecv(const void* send_buf, size_t send_n, int dest, void* recv_buf, size_t recv_n,
                      int source, comm::DType dtype) override {
    device(send_buf, "sendrecv (send)");
    device(recv_buf, "sendrecv (recv)");
    return run(
        [&] { return inner_.sendrecv(send_buf, send_n, dest, recv_buf, recv_n, source, dtype); });
  }
  comm::Work all_to_all_v(const void* send, std::span<const size_t> send_counts, void* recv,
                          std::span<const size_t> recv_counts, comm::DType dtype) override {
    device(send, "all_to_all_v (send)");
    device(recv, "all_to_all_v (recv)");
    return run([&] { return inner_.all_to_all_v(send, send_counts, recv, recv_counts, dtype); });
  }
  comm::Work sendrecv_upto(const void*, size_t, int, void*, size_t, int, size_t*,
                           comm::DType) override {
    fail("guarded-device: sendrecv_upto moves host buffers only (as nccl refuses it)");
  }
  void barrier() override { inner_.barrier(); }
  [[noreturn]] void abort(int exit_code, const std::string& message) override {
    inner_.abort(exit_code, message);
    std::abort();  // (the compiler does not carry [[noreturn]] through the virtual call)
  }

 private:
  static void device(const void* p, const char* what) { guarded_detail::require_device(p, what); }

  // The inner operation with the regions open, waited for before they close; its traffic moves
  // from the inner communicator's counts to ours.
  template <class Issue>
  comm::Work run(Issue&& issue) {
    const comm::CommStats before = inner_.stats();
    {
      guarded_detail::Open open;
      issue().wait();
    }
    stats_ = stats_.plus(inner_.stats().since(before));
    inner_.mutable_stats() = before;
    return {};
  }

  comm::Communicator& inner_;
};

}  // namespace gossamer::testing
