// Unit tests of the backend-independent communication pieces: names, CommStats, the analytic
// byte accounting formulas, Work::wait()'s timeout and error paths, launcher detection,
// make_communicator's choices and errors, and the single backend. Multi-rank behaviour is in
// tests/mpi/.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "comm/byte_accounting.h"
#include "comm/communicator.h"
#include "comm/launch_env.h"
#include "comm/op_args.h"
#include "comm/single_communicator.h"
#include "core/bf16.h"
#include "test_util.h"
#ifdef GOSSAMER_HAVE_NCCL
#include "kernels/cuda/cuda_context.cuh"
#endif

namespace gossamer::comm {
namespace {

using gossamer::testing::expect_error;

TEST(CommNames, DTypes) {
  const std::map<DType, std::pair<size_t, std::string>> expected = {
      {DType::F32, {4, "fp32"}},  {DType::BF16, {2, "bf16"}}, {DType::I32, {4, "int32"}},
      {DType::I64, {8, "int64"}}, {DType::U8, {1, "uint8"}},
  };
  ASSERT_EQ(expected.size(), size_t(kNumDTypes));
  for (const auto& [dtype, e] : expected) {
    EXPECT_EQ(dtype_size(dtype), e.first);
    EXPECT_EQ(dtype_name(dtype), e.second);
  }
}

TEST(CommNames, KindsAndOps) {
  const char* names[kNumKinds] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "send",
                                  "recv",       "sendrecv",       "barrier",    "all_to_all"};
  for (int k = 0; k < kNumKinds; ++k) EXPECT_STREQ(kind_name(Kind(k)), names[k]);
  EXPECT_STREQ(reduce_op_name(ReduceOp::SUM), "sum");
  EXPECT_STREQ(reduce_op_name(ReduceOp::MAX), "max");
  EXPECT_STREQ(reduce_op_name(ReduceOp::MIN), "min");
}

TEST(Bf16, RoundsToNearestEven) {
  auto f = [](uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, 4);
    return x;
  };
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(f(0x3f808000)), 0x3f80);    // tie, 0x3f80 even: down
  EXPECT_EQ(float_to_bf16(f(0x3f818000)), 0x3f82);    // tie, 0x3f81 odd: up
  EXPECT_EQ(float_to_bf16(f(0x3f808001)), 0x3f81);    // above the tie: up
  EXPECT_EQ(float_to_bf16(f(0x3f807fff)), 0x3f80);    // below the tie: down
  EXPECT_EQ(float_to_bf16(f(0xbf818000)), 0xbf82);    // sign symmetric
  EXPECT_EQ(float_to_bf16(f(0x7f7fffff)), 0x7f80);    // max float rounds to inf
  EXPECT_EQ(float_to_bf16(f(0x7f800000)), 0x7f80);    // inf stays inf
  const uint16_t nan = float_to_bf16(f(0x7f800001));  // NaN with only low payload bits
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x007f, 0);
  for (int v = -256; v <= 256; ++v) EXPECT_EQ(bf16_to_float(float_to_bf16(float(v))), float(v));
}

TEST(CommStats, TotalsAndSince) {
  CommStats a;
  a[Kind::ALL_REDUCE] = {3, 100, 200, 0.5};
  a[Kind::SEND] = {1, 7, 0, 0.25};
  EXPECT_EQ(a.bytes_sent(), 107);
  EXPECT_EQ(a.bytes_received(), 200);
  EXPECT_DOUBLE_EQ(a.seconds_waited(), 0.75);
  CommStats b = a;
  b[Kind::ALL_REDUCE].calls += 2;
  b[Kind::ALL_REDUCE].bytes_sent += 40;
  b[Kind::BARRIER].calls += 1;
  b[Kind::BARRIER].seconds_waited += 1.5;
  const CommStats d = b.since(a);
  EXPECT_EQ(d[Kind::ALL_REDUCE].calls, 2);
  EXPECT_EQ(d[Kind::ALL_REDUCE].bytes_sent, 40);
  EXPECT_EQ(d[Kind::ALL_REDUCE].bytes_received, 0);
  EXPECT_EQ(d[Kind::SEND].calls, 0);
  EXPECT_EQ(d[Kind::BARRIER].calls, 1);
  EXPECT_DOUBLE_EQ(d.seconds_waited(), 1.5);
  // Two communicators' traffic together (the trainer's control and buffer communicators).
  CommStats e;
  e[Kind::ALL_REDUCE] = {1, 8, 16, 0.25, 8, 0};
  e[Kind::ALL_GATHER] = {2, 30, 60, 0, 20, 1};
  const CommStats s = a.plus(e);
  EXPECT_EQ(s[Kind::ALL_REDUCE].calls, 4);
  EXPECT_EQ(s[Kind::ALL_REDUCE].bytes_sent, 108);
  EXPECT_EQ(s[Kind::ALL_REDUCE].bytes_received, 216);
  EXPECT_DOUBLE_EQ(s[Kind::ALL_REDUCE].seconds_waited, 0.75);
  EXPECT_EQ(s[Kind::ALL_GATHER].raw_bytes_sent, 20);
  EXPECT_EQ(s[Kind::ALL_GATHER].compressed_calls, 1);
  EXPECT_EQ(s[Kind::SEND].bytes_sent, 7);
  EXPECT_EQ(s.bytes_sent(), 145);
  EXPECT_EQ(s.since(e)[Kind::ALL_REDUCE].bytes_sent, a[Kind::ALL_REDUCE].bytes_sent);
}

// The formulas of communicator.h, worked by hand for N = 4.
TEST(ByteAccounting, Formulas) {
  // all_reduce: 2(N-1)/N * S; S = 1000 fp32 = 4000 bytes -> 6000; rounded down when inexact.
  EXPECT_EQ(all_reduce_bytes(1000, DType::F32, 4).sent, 6000);
  EXPECT_EQ(all_reduce_bytes(1000, DType::F32, 4).received, 6000);
  EXPECT_EQ(all_reduce_bytes(1, DType::U8, 3).sent, 1);  // 2*2/3 = 1.33
  EXPECT_EQ(all_reduce_bytes(1000, DType::F32, 1).sent, 0);
  // reduce_scatter, counts {3, 0, 5, 2} bf16 (S = 20 bytes): rank 2 sends S - 10, receives 3*10.
  const std::vector<size_t> counts = {3, 0, 5, 2};
  EXPECT_EQ(reduce_scatter_bytes(counts, DType::BF16, 2).sent, 10);
  EXPECT_EQ(reduce_scatter_bytes(counts, DType::BF16, 2).received, 30);
  EXPECT_EQ(reduce_scatter_bytes(counts, DType::BF16, 1).sent, 20);
  EXPECT_EQ(reduce_scatter_bytes(counts, DType::BF16, 1).received, 0);
  // all_gather is the mirror image.
  EXPECT_EQ(all_gather_bytes(counts, DType::BF16, 2).sent, 30);
  EXPECT_EQ(all_gather_bytes(counts, DType::BF16, 2).received, 10);
  EXPECT_EQ(all_gather_bytes(counts, DType::BF16, 3).sent, 12);
  EXPECT_EQ(all_gather_bytes(counts, DType::BF16, 3).received, 16);
  // broadcast of 10 int64 from root 1 in a chain 1 -> 2 -> 3 -> 0: rank 0 is last.
  EXPECT_EQ(broadcast_bytes(10, DType::I64, 1, 1, 4).sent, 80);
  EXPECT_EQ(broadcast_bytes(10, DType::I64, 1, 1, 4).received, 0);
  EXPECT_EQ(broadcast_bytes(10, DType::I64, 1, 2, 4).sent, 80);
  EXPECT_EQ(broadcast_bytes(10, DType::I64, 1, 2, 4).received, 80);
  EXPECT_EQ(broadcast_bytes(10, DType::I64, 1, 0, 4).sent, 0);
  EXPECT_EQ(broadcast_bytes(10, DType::I64, 1, 0, 4).received, 80);
  EXPECT_EQ(send_bytes(5, DType::I32).sent, 20);
  EXPECT_EQ(recv_bytes(5, DType::I32).received, 20);
  EXPECT_EQ(sendrecv_bytes(5, 1, 3, 2, DType::I32, 0).sent, 20);
  EXPECT_EQ(sendrecv_bytes(5, 1, 3, 2, DType::I32, 0).received, 12);
  EXPECT_EQ(sendrecv_bytes(5, 0, 3, 2, DType::I32, 0).sent, 0);  // to oneself
  EXPECT_EQ(sendrecv_bytes(5, 1, 3, 0, DType::I32, 0).received, 0);
  // all_to_all, bf16, send {3, 0, 5, 2}, receive {1, 4, 5, 0}: rank 2 keeps its 5 elements and
  // sends (3 + 0 + 2) * 2 bytes, receives (1 + 4 + 0) * 2; rank 0 keeps 3 (sends 7, receives 9).
  const std::vector<size_t> to = {3, 0, 5, 2}, from = {1, 4, 5, 0};
  EXPECT_EQ(all_to_all_bytes(to, from, DType::BF16, 2).sent, 10);
  EXPECT_EQ(all_to_all_bytes(to, from, DType::BF16, 2).received, 10);
  EXPECT_EQ(all_to_all_bytes(to, from, DType::BF16, 0).sent, 14);
  EXPECT_EQ(all_to_all_bytes(to, from, DType::BF16, 0).received, 18);
  EXPECT_EQ(all_to_all_bytes(std::vector<size_t>{7}, std::vector<size_t>{7}, DType::F32, 0).sent,
            0);
  CommStats stats;
  count_call(stats, Kind::SEND, {20, 0});
  count_call(stats, Kind::SEND, {4, 0});
  EXPECT_EQ(stats[Kind::SEND].calls, 2);
  EXPECT_EQ(stats[Kind::SEND].bytes_sent, 24);
}

TEST(OpArgs, OverlapAndCounts) {
  std::vector<float> in(10), out(4);
  const std::vector<size_t> counts = {6, 4};
  EXPECT_FALSE(check_reduce_scatter(in.data(), out.data(), counts, DType::F32, 1, 2));
  EXPECT_TRUE(check_reduce_scatter(in.data(), in.data() + 6, counts, DType::F32, 1, 2));
  expect_error([&] { check_reduce_scatter(in.data(), in.data() + 5, counts, DType::F32, 1, 2); },
               {"reduce_scatter", "overlaps", "6 elements"});
  expect_error([&] { check_all_gather(out.data(), in.data(), counts, DType::F32, 0, 3); },
               {"all_gather", "counts has 2 entries", "(3)"});
  expect_error([&] { check_all_gather(nullptr, in.data(), counts, DType::F32, 1, 2); },
               {"all_gather", "in is null"});
  EXPECT_TRUE(check_all_gather(in.data() + 6, in.data(), counts, DType::F32, 1, 2));
  expect_error([&] { check_root(Kind::BROADCAST, 2, 2); }, {"broadcast", "root 2"});
  expect_error([&] { check_peer(Kind::SEND, 1, 1, 2, false); }, {"send", "this rank"});
  expect_error([&] { check_peer(Kind::RECV, -1, 1, 2, false); }, {"recv", "peer rank -1"});
}

TEST(OpArgs, AllToAll) {
  std::vector<float> send(9), recv(9);
  const std::vector<size_t> to = {2, 3, 4}, from = {4, 3, 2}, two = {1, 1};
  check_all_to_all_v(send.data(), to, recv.data(), from, DType::F32, 1, 3);
  const std::vector<size_t> none = {0, 0};
  check_all_to_all_v(nullptr, none, nullptr, none, DType::F32, 0, 2);  // nothing to move
  expect_error([&] { check_all_to_all_v(send.data(), two, recv.data(), from, DType::F32, 1, 3); },
               {"all_to_all", "send_counts has 2 entries", "(3)"});
  expect_error([&] { check_all_to_all_v(send.data(), to, recv.data(), two, DType::F32, 1, 3); },
               {"all_to_all", "recv_counts has 2 entries", "(3)"});
  expect_error([&] { check_all_to_all_v(nullptr, to, recv.data(), from, DType::F32, 1, 3); },
               {"all_to_all", "send is null", "9 elements"});
  expect_error([&] { check_all_to_all_v(send.data(), to, nullptr, from, DType::F32, 1, 3); },
               {"all_to_all", "recv is null"});
  expect_error([&] { check_all_to_all_v(send.data(), to, recv.data(), from, DType::F32, 0, 3); },
               {"all_to_all", "rank 0 sends 2 elements to itself but receives 4"});
  expect_error(
      [&] { check_all_to_all_v(send.data(), to, send.data() + 8, from, DType::F32, 1, 3); },
      {"all_to_all", "send and recv overlap"});
  std::vector<float> both(18);
  check_all_to_all_v(both.data(), to, both.data() + 9, from, DType::F32, 1, 3);  // adjacent
}

// A communicator whose abort() throws, and a Work state that never completes (or fails).
struct Aborted {
  int code;
  std::string message;
};

class FakeCommunicator final : public Communicator {
 public:
  const char* backend() const override { return "fake"; }
  int rank() const override { return 5; }
  int size() const override { return 8; }
  int local_rank() const override { return 1; }
  bool device_buffers() const override { return false; }
  Work all_reduce(void*, size_t, DType, ReduceOp) override { return {}; }
  Work reduce_scatter(const void*, void*, std::span<const size_t>, DType, ReduceOp) override {
    return {};
  }
  Work all_gather(const void*, void*, std::span<const size_t>, DType) override { return {}; }
  Work broadcast(void*, size_t, DType, int) override { return {}; }
  Work send(const void*, size_t, DType, int) override { return {}; }
  Work recv(void*, size_t, DType, int) override { return {}; }
  Work sendrecv(const void*, size_t, int, void*, size_t, int, DType) override { return {}; }
  Work all_to_all_v(const void*, std::span<const size_t>, void*, std::span<const size_t>,
                    DType) override {
    return {};
  }
  Work sendrecv_upto(const void*, size_t, int, void*, size_t, int, size_t*, DType) override {
    return {};
  }
  void barrier() override {}
  [[noreturn]] void abort(int exit_code, const std::string& message) override {
    throw Aborted{exit_code, message};
  }
};

class StuckState final : public WorkState {
 public:
  explicit StuckState(std::string error = "") : error_(std::move(error)) {}
  bool wait_for(double seconds) override {
    if (!error_.empty()) throw Error(error_);
    EXPECT_GT(seconds, 0) << "would block forever";
    return false;
  }
  bool done() override { return false; }

 private:
  std::string error_;
};

TEST(Work, DefaultIsComplete) {
  Work w;
  EXPECT_TRUE(w.done());
  w.wait();
}

TEST(Work, TimeoutAbortsWithTheDocumentedMessage) {
  FakeCommunicator comm;
  comm.set_timeout(0.25);
  comm.set_context("step 12");
  Work w(std::make_shared<StuckState>(), &comm, Kind::REDUCE_SCATTER, 4096);
  EXPECT_FALSE(w.done());
  try {
    w.wait();
    ADD_FAILURE() << "wait() returned";
  } catch (const Aborted& a) {
    EXPECT_EQ(a.code, kExitPeerFailure);
    EXPECT_EQ(a.message,
              "rank 5: reduce_scatter of 4096 bytes did not complete within 0.25 s (step 12); a "
              "peer rank died or hangs");
  }
}

TEST(Work, ErrorsAreRethrownAndWaitIsCounted) {
  FakeCommunicator comm;
  Work w(std::make_shared<StuckState>("rank 5: mpi all_gather failed: boom"), &comm,
         Kind::ALL_GATHER, 8);
  expect_error([&] { w.wait(); }, {"all_gather failed", "boom"});
  EXPECT_GE(comm.stats()[Kind::ALL_GATHER].seconds_waited, 0.0);
}

// Clears the launcher variables for a test and restores them afterwards.
class LaunchEnvScope {
 public:
  LaunchEnvScope() {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
      unsetenv(name);
    }
  }
  ~LaunchEnvScope() {
    for (const auto& [name, value] : saved_) {
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }
  static void set(const char* name, const char* value) { setenv(name, value, 1); }

 private:
  static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_RANK",
                                           "OMPI_COMM_WORLD_SIZE",
                                           "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "PMI_RANK",
                                           "PMI_SIZE",
                                           "MPI_LOCALRANKID",
                                           "SLURM_PROCID",
                                           "SLURM_NTASKS",
                                           "SLURM_STEP_NUM_TASKS",
                                           "SLURM_LOCALID",
                                           "PMIX_RANK"};
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(LaunchEnv, NoneFound) {
  LaunchEnvScope scope;
  const LaunchEnv e = detect_launch_env();
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.size, 1);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_STREQ(e.source, "none");
}

TEST(LaunchEnv, OpenMpi) {
  LaunchEnvScope scope;
  LaunchEnvScope::set("OMPI_COMM_WORLD_RANK", "3");
  LaunchEnvScope::set("OMPI_COMM_WORLD_SIZE", "4");
  LaunchEnvScope::set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  LaunchEnvScope::set("PMIX_RANK", "3");
  const LaunchEnv e = detect_launch_env();
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_STREQ(e.source, "OMPI_COMM_WORLD_*");
}

TEST(LaunchEnv, PmiSlurmAndPmix) {
  {
    LaunchEnvScope scope;
    LaunchEnvScope::set("PMI_RANK", "2");
    LaunchEnvScope::set("PMI_SIZE", "3");
    const LaunchEnv e = detect_launch_env();
    EXPECT_EQ(e.rank, 2);
    EXPECT_EQ(e.size, 3);
    EXPECT_STREQ(e.source, "PMI_RANK/PMI_SIZE");
  }
  {
    LaunchEnvScope scope;
    LaunchEnvScope::set("SLURM_PROCID", "5");
    LaunchEnvScope::set("SLURM_NTASKS", "16");
    LaunchEnvScope::set("SLURM_STEP_NUM_TASKS", "8");
    LaunchEnvScope::set("SLURM_LOCALID", "1");
    const LaunchEnv e = detect_launch_env();
    EXPECT_EQ(e.rank, 5);
    EXPECT_EQ(e.size, 8);  // the step's tasks, not the allocation's
    EXPECT_EQ(e.local_rank, 1);
    EXPECT_STREQ(e.source, "SLURM_PROCID/SLURM_NTASKS");
  }
  {
    LaunchEnvScope scope;
    LaunchEnvScope::set("PMIX_RANK", "1");
    const LaunchEnv e = detect_launch_env();
    EXPECT_EQ(e.rank, 1);
    EXPECT_EQ(e.size, 0);  // unknown before MPI starts
    EXPECT_STREQ(e.source, "PMIX_RANK");
  }
}

TEST(LaunchEnv, MalformedValuesNameTheVariable) {
  {
    LaunchEnvScope scope;
    LaunchEnvScope::set("OMPI_COMM_WORLD_RANK", "x1");
    LaunchEnvScope::set("OMPI_COMM_WORLD_SIZE", "4");
    expect_error([] { detect_launch_env(); }, {"OMPI_COMM_WORLD_RANK", "'x1'"});
  }
  {
    LaunchEnvScope scope;
    LaunchEnvScope::set("PMI_RANK", "4");
    LaunchEnvScope::set("PMI_SIZE", "4");
    expect_error([] { detect_launch_env(); }, {"PMI_RANK=4", "PMI_SIZE=4", "below"});
  }
  {
    LaunchEnvScope scope;
    LaunchEnvScope::set("SLURM_PROCID", "0");
    expect_error([] { detect_launch_env(); }, {"SLURM_NTASKS", "missing"});
  }
}

TEST(MakeCommunicator, SingleAndErrors) {
  LaunchEnvScope scope;
  const auto host = BufferLocation::BUFFER_LOCATION_HOST;
  const auto device = BufferLocation::BUFFER_LOCATION_DEVICE;
  auto comm = make_communicator("single", host);
  EXPECT_STREQ(comm->backend(), "single");
  EXPECT_EQ(comm->size(), 1);
  expect_error([&] { make_communicator("gloo", host); },
               {"parallel.backend", "\"gloo\"", "auto", "single", "mpi", "nccl"});
  expect_error([&] { make_communicator("nccl", host); },
               {"parallel.backend", "nccl", "host memory"});
#ifndef GOSSAMER_HAVE_NCCL
  expect_error([&] { make_communicator("nccl", device); },
               {"parallel.backend", "nccl", "GOSSAMER_CUDA"});
  auto automatic = make_communicator("auto", host);
  EXPECT_STREQ(automatic->backend(), "single");
#else
  if (gossamer::kernels::cuda::visible_gpus() == 0) {
    expect_error([&] { make_communicator("nccl", device); }, {"parallel.backend", "no GPU"});
    EXPECT_STREQ(make_communicator("auto", host)->backend(), "single");
  }
#endif
  LaunchEnvScope::set("OMPI_COMM_WORLD_RANK", "1");
  LaunchEnvScope::set("OMPI_COMM_WORLD_SIZE", "4");
  expect_error([&] { make_communicator("single", host); },
               {"parallel.backend", "single", "rank 1 of 4", "OMPI_COMM_WORLD_*"});
}

// The choice is made by where the buffers live: host buffers never go to NCCL, whatever GPUs
// are visible (CPU training on a GPU machine), device buffers need it.
TEST(MakeCommunicator, ChoiceFollowsTheBuffers) {
  const auto host = BufferLocation::BUFFER_LOCATION_HOST;
  const auto device = BufferLocation::BUFFER_LOCATION_DEVICE;
  LaunchEnv alone;  // no launcher: size 1
  alone.source = "none";
  LaunchEnv launched;
  launched.rank = 1, launched.size = 4, launched.source = "Open MPI";
  for (const bool built : {false, true}) {
    for (const int gpus : {0, 2}) {
      SCOPED_TRACE(strprintf("built with nccl %d, %d GPU(s)", int(built), gpus));
      EXPECT_EQ(choose_backend(Backend::BACKEND_AUTO, host, alone, gpus, built).backend,
                Backend::BACKEND_SINGLE);
      EXPECT_EQ(choose_backend(Backend::BACKEND_AUTO, host, launched, gpus, built).backend,
                Backend::BACKEND_MPI);
      expect_error([&] { choose_backend(Backend::BACKEND_NCCL, host, launched, gpus, built); },
                   {"parallel.backend = \"nccl\"", "host memory"});
      // Device buffers never reach MPI (not CUDA-aware here), and a launched single is refused
      // without suggesting it.
      expect_error([&] { choose_backend(Backend::BACKEND_MPI, device, launched, gpus, built); },
                   {"parallel.backend = \"mpi\"", "device memory", "not CUDA-aware",
                    "\"nccl\" or \"auto\""});
      expect_error([&] { choose_backend(Backend::BACKEND_MPI, device, alone, gpus, built); },
                   {"parallel.backend = \"mpi\"", "device memory"});
      expect_error([&] { choose_backend(Backend::BACKEND_SINGLE, device, launched, gpus, built); },
                   {"parallel.backend = \"single\"", "rank 1 of 4", "use \"nccl\" or \"auto\""});
      if (built && gpus > 0) {
        EXPECT_EQ(choose_backend(Backend::BACKEND_AUTO, device, launched, gpus, built).backend,
                  Backend::BACKEND_NCCL);
        EXPECT_EQ(choose_backend(Backend::BACKEND_NCCL, device, launched, gpus, built).backend,
                  Backend::BACKEND_NCCL);
      } else {
        expect_error([&] { choose_backend(Backend::BACKEND_AUTO, device, launched, gpus, built); },
                     {"parallel.backend = \"auto\"", "device buffers need NCCL"});
      }
    }
  }
  EXPECT_EQ(choose_backend(Backend::BACKEND_MPI, host, alone, 0, false).backend,
            Backend::BACKEND_MPI);
  const BackendChoice gpu_host = choose_backend(Backend::BACKEND_AUTO, host, launched, 2, true);
  EXPECT_NE(gpu_host.why.find("never nccl"), std::string::npos) << gpu_host.why;
}

TEST(SingleBackend, Collectives) {
  auto comm = make_single_communicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->local_rank(), 0);
  EXPECT_FALSE(comm->device_buffers());
  std::vector<float> buf = {1, 2, 3};
  comm->all_reduce(buf.data(), 3, DType::F32, ReduceOp::SUM).wait();
  EXPECT_EQ(buf, (std::vector<float>{1, 2, 3}));
  comm->broadcast(buf.data(), 3, DType::F32, 0).wait();
  EXPECT_EQ(buf, (std::vector<float>{1, 2, 3}));

  const std::vector<size_t> counts = {3};
  std::vector<float> out(3, 0);
  comm->reduce_scatter(buf.data(), out.data(), counts, DType::F32, ReduceOp::MAX).wait();
  EXPECT_EQ(out, buf);
  comm->reduce_scatter(buf.data(), buf.data(), counts, DType::F32, ReduceOp::SUM).wait();
  std::vector<int64_t> gathered(3, 0), part = {7, 8, 9};
  comm->all_gather(part.data(), gathered.data(), counts, DType::I64).wait();
  EXPECT_EQ(gathered, part);
  comm->all_gather(gathered.data(), gathered.data(), counts, DType::I64).wait();
  EXPECT_EQ(gathered, part);
  std::vector<uint16_t> recv(2, 0), send = {5, 6};
  comm->sendrecv(send.data(), 2, 0, recv.data(), 2, 0, DType::BF16).wait();
  EXPECT_EQ(recv, send);
  comm->barrier();

  const CommStats& s = comm->stats();
  for (Kind k : {Kind::ALL_REDUCE, Kind::BROADCAST, Kind::ALL_GATHER, Kind::REDUCE_SCATTER})
    EXPECT_EQ(s[k].calls, 2 - (k == Kind::ALL_REDUCE || k == Kind::BROADCAST)) << kind_name(k);
  EXPECT_EQ(s[Kind::SENDRECV].calls, 1);
  EXPECT_EQ(s[Kind::BARRIER].calls, 1);
  EXPECT_EQ(s.bytes_sent(), 0);
  EXPECT_EQ(s.bytes_received(), 0);
}

TEST(SingleBackend, AllToAllCopiesTheOwnPart) {
  auto comm = make_single_communicator();
  const std::vector<size_t> five = {5};
  std::vector<uint16_t> send = {1, 2, 3, 4, 5}, recv(7, 0xEEEE);
  comm->all_to_all_v(send.data(), five, recv.data() + 1, five, DType::BF16).wait();
  EXPECT_EQ(recv, (std::vector<uint16_t>{0xEEEE, 1, 2, 3, 4, 5, 0xEEEE}));
  EXPECT_EQ(send, (std::vector<uint16_t>{1, 2, 3, 4, 5}));
  const std::vector<size_t> zero = {0};
  comm->all_to_all_v(nullptr, zero, nullptr, zero, DType::U8).wait();
  const CommStats& s = comm->stats();
  EXPECT_EQ(s[Kind::ALL_TO_ALL].calls, 2);
  EXPECT_EQ(s.bytes_sent() + s.bytes_received(), 0);
  const std::vector<size_t> two = {1, 1}, four = {4};
  expect_error([&] { comm->all_to_all_v(send.data(), two, recv.data(), five, DType::BF16); },
               {"all_to_all", "send_counts has 2 entries"});
  expect_error([&] { comm->all_to_all_v(send.data(), five, recv.data(), four, DType::BF16); },
               {"all_to_all", "sends 5 elements to itself but receives 4"});
  expect_error([&] { comm->all_to_all_v(send.data(), five, send.data() + 2, five, DType::BF16); },
               {"all_to_all", "overlap"});
  EXPECT_EQ(comm->stats()[Kind::ALL_TO_ALL].calls, 2);  // refused calls are not counted
}

TEST(SingleBackend, SendRecvUptoCopiesAndReportsTheLength) {
  auto comm = make_single_communicator();
  std::vector<uint16_t> send = {1, 2, 3}, recv(6, 0xEEEE);
  size_t received = 99;
  comm->sendrecv_upto(send.data(), 3, 0, recv.data() + 1, 4, 0, &received, DType::BF16).wait();
  EXPECT_EQ(received, 3u);
  EXPECT_EQ(recv, (std::vector<uint16_t>{0xEEEE, 1, 2, 3, 0xEEEE, 0xEEEE}));
  comm->sendrecv_upto(nullptr, 0, 0, recv.data(), 4, 0, &received, DType::BF16).wait();
  EXPECT_EQ(received, 0u);
  EXPECT_EQ(comm->stats()[Kind::SENDRECV].calls, 2);
  EXPECT_EQ(comm->stats().bytes_sent() + comm->stats().bytes_received(), 0);
  expect_error(
      [&] { comm->sendrecv_upto(send.data(), 3, 0, recv.data(), 2, 0, &received, DType::BF16); },
      {"sendrecv_upto", "sends 3 elements to itself, more than the 2"});
  expect_error(
      [&] { comm->sendrecv_upto(send.data(), 3, 1, recv.data(), 4, 0, &received, DType::BF16); },
      {"sendrecv", "peer"});
  expect_error(
      [&] { comm->sendrecv_upto(send.data(), 3, 0, recv.data(), 4, 0, nullptr, DType::BF16); },
      {"sendrecv_upto", "received is null"});
}

TEST(SingleBackend, Errors) {
  auto comm = make_single_communicator();
  float x = 0;
  expect_error([&] { comm->send(&x, 1, DType::F32, 0); }, {"send", "no other rank"});
  expect_error([&] { comm->recv(&x, 1, DType::F32, 1); }, {"recv", "no other rank"});
  expect_error([&] { comm->broadcast(&x, 1, DType::F32, 1); }, {"broadcast", "root 1"});
  expect_error([&] { comm->sendrecv(&x, 1, 1, &x, 1, 0, DType::F32); }, {"sendrecv", "peer"});
  expect_error([&] { comm->sendrecv(&x, 1, 0, &x, 0, 0, DType::F32); }, {"sendrecv", "receives 0"});
  const std::vector<size_t> two = {1, 1};
  expect_error([&] { comm->all_gather(&x, &x, two, DType::F32); }, {"counts has 2 entries"});
  expect_error([&] { comm->all_reduce(nullptr, 4, DType::F32, ReduceOp::SUM); },
               {"all_reduce", "null"});
  comm->all_reduce(nullptr, 0, DType::F32, ReduceOp::SUM).wait();  // nothing to do
}

}  // namespace
}  // namespace gossamer::comm
