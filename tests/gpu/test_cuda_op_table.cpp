// Every op of kernels/ops.h has a CUDA kernel behind the staged table the CUDA op test runs
// (cuda_staged_ops.h). Needs no GPU (the table is function pointers), so it runs in every CUDA
// build, CI included, and an op added to the table without a CUDA version fails here; it is a
// binary of its own because the op test's binary reports "skipped" as a whole without a GPU.
#include <gtest/gtest.h>

#include "cuda_staged_ops.h"

namespace {

TEST(CudaOpTable, EveryOpHasAKernel) {
  const char* unset = gossamer::kernels::first_unset_op(gossamer::cuda_test::cuda_staged_ops());
  EXPECT_EQ(unset, nullptr) << "no CUDA kernel for " << unset;
}

}  // namespace
