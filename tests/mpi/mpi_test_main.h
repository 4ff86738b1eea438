// The main() of every multi-rank test binary (tests/mpi/test_*.cpp, run by ctest under mpirun
// with 2, 3 and 4 ranks): it makes the mpi communicator and, when every rank has a GPU, the
// nccl one, for the tests to reach through g_mpi / g_nccl; only rank 0 prints the gtest report,
// other ranks print their failures prefixed by the rank, and every rank exits non-zero when any
// rank failed. A test binary's main is `return gossamer::comm::test::run_all_ranks(argc, argv);`.
// Invariant: g_mpi (and g_nccl when set) are valid while the tests run, null outside.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "core/log.h"
#ifdef GOSSAMER_HAVE_NCCL
#include "kernels/cuda/cuda_context.cuh"
#endif

namespace gossamer::comm::test {

inline Communicator* g_mpi = nullptr;
inline Communicator* g_nccl = nullptr;
inline std::string g_nccl_skip = "built without CUDA (GOSSAMER_CUDA=OFF)";  // why g_nccl is null

// On ranks other than 0: print only failures, each prefixed by the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // (UnitTest::current_test_info() would take the lock gtest holds while reporting a result.)
  void OnTestStart(const ::testing::TestInfo& t) override {
    test_ = std::string(t.test_suite_name()) + "." + t.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stdout, "[rank %d] FAILED %s at %s:%d\n%s\n", rank_, test_.c_str(),
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
    std::fflush(stdout);
  }

 private:
  int rank_;
  std::string test_;
};

// Runs every test on every rank; returns the exit status (1 when any rank failed).
inline int run_all_ranks(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto mpi = make_communicator("mpi", BufferLocation::BUFFER_LOCATION_HOST);
  mpi->set_timeout(60);  // a desynchronised test aborts the job instead of hanging it
  gossamer::log_set_rank(mpi->rank());
  g_mpi = mpi.get();
  std::unique_ptr<Communicator> nccl;
#ifdef GOSSAMER_HAVE_NCCL
  // One GPU per rank of a node, on every node, or no nccl tests (all ranks decide alike).
  int32_t enough = kernels::cuda::visible_gpus() > mpi->local_rank();
  mpi->all_reduce(&enough, 1, DType::I32, ReduceOp::MIN).wait();
  if (enough) {
    nccl = make_communicator("nccl", BufferLocation::BUFFER_LOCATION_DEVICE);
    nccl->set_timeout(60);
    g_nccl = nccl.get();
  } else {
    g_nccl_skip = kernels::cuda::visible_gpus() == 0
                      ? "no GPU is visible (cudaGetDeviceCount)"
                      : "fewer visible GPUs than ranks on a node (one GPU per rank needed)";
  }
#endif
  if (mpi->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(mpi->rank()));
  }
  const int rc = RUN_ALL_TESTS();
  // Every rank learns whether any rank failed, so every rank's exit status reports it.
  int32_t failed = rc != 0;
  mpi->all_reduce(&failed, 1, DType::I32, ReduceOp::MAX).wait();
  if (mpi->rank() == 0)
    std::printf("%d ranks: %s\n", mpi->size(),
                failed ? "FAILED (see the [rank R] lines for other ranks)" : "all ranks passed");
  g_nccl = g_mpi = nullptr;
  nccl.reset();
  mpi.reset();
  return failed ? 1 : 0;
}

}  // namespace gossamer::comm::test
