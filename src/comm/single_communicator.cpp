// Implementation of the single-process backend (single_communicator.h). Every operation is
// complete when it returns, so its Work is the default (already complete) one.
#include "comm/single_communicator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "comm/byte_accounting.h"
#include "comm/op_args.h"
#include "core/error.h"
#include "core/log.h"

namespace gossamer::comm {

namespace {

class SingleCommunicator final : public Communicator {
 public:
  const char* backend() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  bool device_buffers() const override { return false; }

  Work all_reduce(void* buf, size_t n, DType dtype, ReduceOp) override {
    check_buffer(Kind::ALL_REDUCE, buf, n, "buf");
    count_call(stats_, Kind::ALL_REDUCE, all_reduce_bytes(n, dtype, 1));
    return {};
  }

  Work reduce_scatter(const void* in, void* out, std::span<const size_t> counts, DType dtype,
                      ReduceOp) override {
    const bool in_place = check_reduce_scatter(in, out, counts, dtype, 0, 1);
    if (!in_place && counts[0] > 0) std::memcpy(out, in, counts[0] * dtype_size(dtype));
    count_call(stats_, Kind::REDUCE_SCATTER, reduce_scatter_bytes(counts, dtype, 0));
    return {};
  }

  Work all_gather(const void* in, void* out, std::span<const size_t> counts, DType dtype) override {
    const bool in_place = check_all_gather(in, out, counts, dtype, 0, 1);
    if (!in_place && counts[0] > 0) std::memcpy(out, in, counts[0] * dtype_size(dtype));
    count_call(stats_, Kind::ALL_GATHER, all_gather_bytes(counts, dtype, 0));
    return {};
  }

  Work broadcast(void* buf, size_t n, DType dtype, int root) override {
    check_root(Kind::BROADCAST, root, 1);
    check_buffer(Kind::BROADCAST, buf, n, "buf");
    count_call(stats_, Kind::BROADCAST, broadcast_bytes(n, dtype, root, 0, 1));
    return {};
  }

  Work send(const void*, size_t, DType, int peer) override {
    fail("comm send: peer rank %d, but the single backend has no other rank", peer);
  }

  Work recv(void*, size_t, DType, int peer) override {
    fail("comm recv: peer rank %d, but the single backend has no other rank", peer);
  }

  // With oneself (dest = source = 0): a copy.
  Work sendrecv(const void* send_buf, size_t send_n, int dest, void* recv_buf, size_t recv_n,
                int source, DType dtype) override {
    check_peer(Kind::SENDRECV, dest, 0, 1, true);
    check_peer(Kind::SENDRECV, source, 0, 1, true);
    check_buffer(Kind::SENDRECV, send_buf, send_n, "send_buf");
    check_buffer(Kind::SENDRECV, recv_buf, recv_n, "recv_buf");
    GOSSAMER_CHECK(send_n == recv_n, "comm sendrecv: sends %zu elements to itself but receives %zu",
                   send_n, recv_n);
    if (send_n > 0 && send_buf != recv_buf)
      std::memmove(recv_buf, send_buf, send_n * dtype_size(dtype));
    count_call(stats_, Kind::SENDRECV, sendrecv_bytes(send_n, dest, recv_n, source, dtype, 0));
    return {};
  }

  // Only the part for oneself: a copy.
  Work all_to_all_v(const void* send, std::span<const size_t> send_counts, void* recv,
                    std::span<const size_t> recv_counts, DType dtype) override {
    check_all_to_all_v(send, send_counts, recv, recv_counts, dtype, 0, 1);
    if (send_counts[0] > 0) std::memcpy(recv, send, send_counts[0] * dtype_size(dtype));
    count_call(stats_, Kind::ALL_TO_ALL, all_to_all_bytes(send_counts, recv_counts, dtype, 0));
    return {};
  }

  Work sendrecv_upto(const void* send_buf, size_t send_n, int dest, void* recv_buf,
                     size_t recv_capacity, int source, size_t* received, DType dtype) override {
    check_peer(Kind::SENDRECV, dest, 0, 1, true);
    check_peer(Kind::SENDRECV, source, 0, 1, true);
    check_buffer(Kind::SENDRECV, send_buf, send_n, "send_buf");
    check_buffer(Kind::SENDRECV, recv_buf, recv_capacity, "recv_buf");
    GOSSAMER_CHECK(received != nullptr, "comm sendrecv_upto: received is null");
    GOSSAMER_CHECK(send_n <= recv_capacity,
                   "comm sendrecv_upto: rank 0 sends %zu elements to itself, more than the %zu it "
                   "can receive",
                   send_n, recv_capacity);
    if (send_n > 0 && send_buf != recv_buf)
      std::memmove(recv_buf, send_buf, send_n * dtype_size(dtype));
    *received = send_n;
    count_call(stats_, Kind::SENDRECV, {});
    return {};
  }

  void barrier() override { count_call(stats_, Kind::BARRIER, {}); }

  [[noreturn]] void abort(int exit_code, const std::string& message) override {
    log_error("%s", message.c_str());
    std::fflush(nullptr);
    std::_Exit(exit_code);
  }
};

}  // namespace

std::unique_ptr<Communicator> make_single_communicator() {
  return std::make_unique<SingleCommunicator>();
}

}  // namespace gossamer::comm
