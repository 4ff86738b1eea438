// Implementation of block_ops.cuh.
#include <cuda_runtime.h>

#include "kernels/cuda/block_ops.cuh"
#include "kernels/cuda/cuda_context.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;

__device__ __forceinline__ size_t block_elements(int32_t b, size_t B, size_t n_x) {
  const size_t rest = n_x - size_t(b) * B;
  return rest < B ? rest : B;
}

// Element e = j B + i of the list: block j's element i (skipped past the block's end).
__global__ void accumulate_blocks_kernel(float* compact, const float* x, const int32_t* blocks,
                                         size_t n_blocks, size_t B, size_t n_x) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n_blocks * B;
       e += size_t(gridDim.x) * blockDim.x) {
    const size_t j = e / B, i = e % B;
    if (i < block_elements(blocks[j], B, n_x)) compact[e] += x[size_t(blocks[j]) * B + i];
  }
}

__global__ void zero_blocks_kernel(float* x, const int32_t* blocks, size_t n_blocks, size_t B,
                                   size_t n_x) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n_blocks * B;
       e += size_t(gridDim.x) * blockDim.x) {
    const size_t j = e / B, i = e % B;
    if (i < block_elements(blocks[j], B, n_x)) x[size_t(blocks[j]) * B + i] = 0.0f;
  }
}

__global__ void block_l1_norms_kernel(double* out, const float* x, const int32_t* blocks,
                                      size_t n_blocks, size_t B, size_t n_x) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < n_blocks;
       j += size_t(gridDim.x) * blockDim.x) {
    const float* w = x + size_t(blocks[j]) * B;
    double l1 = 0;
    for (size_t i = 0, e = block_elements(blocks[j], B, n_x); i < e; ++i) l1 += fabs(double(w[i]));
    out[j] = l1;
  }
}

__global__ void increment_clamped_kernel(int32_t* x, size_t n, int32_t cap) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < n;
       j += size_t(gridDim.x) * blockDim.x)
    x[j] = x[j] + 1 < cap ? x[j] + 1 : cap;
}

__global__ void assign_at_kernel(int32_t* x, const int32_t* idx, size_t k, int32_t value) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < k;
       j += size_t(gridDim.x) * blockDim.x)
    x[idx[j]] = value;
}

}  // namespace

void assign_at(int32_t* x, const int32_t* idx, size_t k, int32_t value) {
  if (k == 0) return;
  assign_at_kernel<<<grid_for(k, kThreads), kThreads, 0, stream()>>>(x, idx, k, value);
  GOSSAMER_CUDA_LAUNCHED("assign_at_kernel");
}

void accumulate_blocks(float* compact, const float* x, const int32_t* blocks, size_t n_blocks,
                       size_t B, size_t n_x) {
  if (n_blocks == 0) return;
  accumulate_blocks_kernel<<<grid_for(n_blocks * B, kThreads), kThreads, 0, stream()>>>(
      compact, x, blocks, n_blocks, B, n_x);
  GOSSAMER_CUDA_LAUNCHED("accumulate_blocks_kernel");
}

void zero_blocks(float* x, const int32_t* blocks, size_t n_blocks, size_t B, size_t n_x) {
  if (n_blocks == 0) return;
  zero_blocks_kernel<<<grid_for(n_blocks * B, kThreads), kThreads, 0, stream()>>>(x, blocks,
                                                                                  n_blocks, B, n_x);
  GOSSAMER_CUDA_LAUNCHED("zero_blocks_kernel");
}

void block_l1_norms(double* out, const float* x, const int32_t* blocks, size_t n_blocks, size_t B,
                    size_t n_x) {
  if (n_blocks == 0) return;
  block_l1_norms_kernel<<<grid_for(n_blocks, kThreads), kThreads, 0, stream()>>>(out, x, blocks,
                                                                                 n_blocks, B, n_x);
  GOSSAMER_CUDA_LAUNCHED("block_l1_norms_kernel");
}

void increment_clamped(int32_t* x, size_t n, int32_t cap) {
  if (n == 0) return;
  increment_clamped_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(x, n, cap);
  GOSSAMER_CUDA_LAUNCHED("increment_clamped_kernel");
}

}  // namespace gossamer::kernels::cuda
