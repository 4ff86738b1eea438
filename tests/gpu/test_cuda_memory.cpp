// The CUDA backend's memory (kernels/cuda/memory.cuh) through Buffer<T>: zero-filled on
// allocation, uploads and read-backs at an offset, zero(), an empty buffer, copy() on the
// device, and the copies ordered after a kernel on the ops' stream. Without a GPU every test is
// SKIPPED, never passed.
#include <gtest/gtest.h>

#include <vector>

#include "core/buffer.h"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/memory.cuh"
#include "skip_without_gpu.h"

namespace {

using gossamer::Buffer;
namespace k = gossamer::kernels::cuda;

TEST(CudaMemory, BufferZeroFilledRoundTripsAndZero) {
  SKIP_WITHOUT_GPU();
  const size_t n = (size_t{1} << 20) + 3;
  Buffer<float> b(n, k::kMemory);
  EXPECT_FALSE(b.memory().host_accessible);
  std::vector<float> all(n, -1.0f);
  b.download(all.data(), n);
  size_t nonzero = 0;
  for (float x : all) nonzero += x != 0.0f;
  EXPECT_EQ(nonzero, 0u) << "allocation zero-filled";
  std::vector<float> in(1000), out(1000, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i) * 0.25f;
  b.upload(in.data(), in.size(), n - 1000);
  k::scale(b.data() + (n - 1000), 2.0f, 1000);  // on the ops' stream: the read-back follows it
  b.download(out.data(), out.size(), n - 1000);
  size_t wrong = 0;
  for (size_t i = 0; i < in.size(); ++i) wrong += out[i] != in[i] * 2.0f;
  EXPECT_EQ(wrong, 0u);
  b.zero();
  b.download(out.data(), out.size(), n - 1000);
  wrong = 0;
  for (float x : out) wrong += x != 0.0f;
  EXPECT_EQ(wrong, 0u) << "zero()";
  Buffer<float> empty(0, k::kMemory);
  EXPECT_EQ(empty.data(), nullptr);
  empty.zero();
  // copy: device to device, ordered after the ops before it (the scale) and before the read.
  Buffer<float> c(1000, k::kMemory);
  b.upload(in.data(), in.size(), 7);
  k::scale(b.data() + 7, 4.0f, 1000);
  k::kMemory.copy(c.data(), b.data() + 7, 1000 * sizeof(float));
  k::kMemory.copy(c.data(), b.data(), 0);  // 0 bytes: nothing
  c.download(out.data(), out.size());
  wrong = 0;
  for (size_t i = 0; i < in.size(); ++i) wrong += out[i] != in[i] * 4.0f;
  EXPECT_EQ(wrong, 0u) << "copy()";
}

}  // namespace
