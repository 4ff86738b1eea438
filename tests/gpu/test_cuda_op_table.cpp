// Every op of kernels/ops.h has a CUDA kernel, in the product table (kernels/cuda/ops_table.h,
// with the CUDA memory) and behind the staged table the CUDA op test runs (cuda_staged_ops.h,
// with host memory: it stages host buffers itself). Needs no GPU (the tables are function
// pointers), so it runs in every CUDA build, CI included, and an op added to the table without
// a CUDA version fails here; it is a binary of its own because the op test's binary reports
// "skipped" as a whole without a GPU.
#include <gtest/gtest.h>

#include "cuda_staged_ops.h"
#include "kernels/cuda/ops_table.h"

namespace {

TEST(CudaOpTable, EveryOpHasAKernel) {
  const char* unset = gossamer::kernels::first_unset_op(gossamer::cuda_test::cuda_staged_ops());
  EXPECT_EQ(unset, nullptr) << "no CUDA kernel for " << unset << " in the staged table";
  const gossamer::kernels::OpTable& product = gossamer::kernels::cuda::ops();
  const char* unset_product = gossamer::kernels::first_unset_op(product);
  EXPECT_EQ(unset_product, nullptr) << "no CUDA kernel for " << unset_product;
  EXPECT_STREQ(product.backend, "cuda");
  EXPECT_STREQ(product.memory->backend, "cuda");
  EXPECT_FALSE(product.memory->host_accessible);
}

}  // namespace
