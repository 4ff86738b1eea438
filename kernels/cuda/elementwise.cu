// Implementation of elementwise.cuh.
#include <cuda_runtime.h>

#include <vector>

#include "core/bf16.h"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/elementwise.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kSumBlocks = 256;  // partials of sum_squares (fixed: determinism)

__global__ void add_kernel(float* out, const float* a, const float* b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = a[i] + b[i];
}

__global__ void accumulate_kernel(float* dst, const float* src, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

__global__ void scale_kernel(float* x, float s, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    x[i] *= s;
}

__global__ void axpy_kernel(float* y, float a, const float* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] += a * x[i];
}

__global__ void axpby_kernel(float* y, float a, const float* x, float b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = b * y[i] + a * x[i];
}

// float -> bf16 with core/bf16.h's rule (the same function), on the bits.
__global__ void to_bf16_kernel(uint16_t* out, const float* in, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = gossamer::bf16_bits_of(__float_as_uint(in[i]));
}

__global__ void from_bf16_kernel(float* out, const uint16_t* in, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __uint_as_float(uint32_t(in[i]) << 16);
}

// Block b sums x[i]^2 over i = b*kThreads + t + k*(gridDim*kThreads) in thread t, then a tree
// over the block's threads in a fixed order. With add (accumulate_sum_squares) x[i] += add[i]
// first; without square (sum) the terms are x[i].
__global__ void sum_squares_kernel(float* x, const float* add, bool square, size_t n,
                                   double* partial) {
  __shared__ double s[kThreads];
  double acc = 0;
  for (size_t i = blockIdx.x * size_t(kThreads) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * kThreads) {
    float xi = x[i];
    if (add != nullptr) {
      xi += add[i];
      x[i] = xi;
    }
    const double v = xi;
    acc += square ? v * v : v;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

// *out = the partials added in block order, as the host adds them.
__global__ void add_partials_kernel(const double* partial, unsigned n, double* out) {
  double total = 0;
  for (unsigned b = 0; b < n; ++b) total += partial[b];
  *out = total;
}

// The sum of the kernel's partials, added on the host in block order.
double blocked_sum(float* x, const float* add, bool square, size_t n) {
  if (n == 0) return 0.0;
  auto* partial = static_cast<double*>(workspace(kSumBlocks * sizeof(double)));
  sum_squares_kernel<<<kSumBlocks, kThreads, 0, stream()>>>(x, add, square, n, partial);
  GOSSAMER_CUDA_LAUNCHED("sum_squares_kernel");
  std::vector<double> host(kSumBlocks);
  GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(host.data(), partial, kSumBlocks * sizeof(double),
                                      cudaMemcpyDeviceToHost, stream()));
  GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream()));
  double total = 0;
  for (double p : host) total += p;
  return total;
}

}  // namespace

void add(float* out, const float* a, const float* b, size_t n) {
  if (n == 0) return;
  add_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, a, b, n);
  GOSSAMER_CUDA_LAUNCHED("add_kernel");
}

void accumulate(float* dst, const float* src, size_t n) {
  if (n == 0) return;
  accumulate_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(dst, src, n);
  GOSSAMER_CUDA_LAUNCHED("accumulate_kernel");
}

void scale(float* x, float s, size_t n) {
  if (n == 0) return;
  scale_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(x, s, n);
  GOSSAMER_CUDA_LAUNCHED("scale_kernel");
}

void axpy(float* y, float a, const float* x, size_t n) {
  if (n == 0) return;
  axpy_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(y, a, x, n);
  GOSSAMER_CUDA_LAUNCHED("axpy_kernel");
}

void to_bf16(uint16_t* out, const float* in, size_t n) {
  if (n == 0) return;
  to_bf16_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, in, n);
  GOSSAMER_CUDA_LAUNCHED("to_bf16_kernel");
}

void from_bf16(float* out, const uint16_t* in, size_t n) {
  if (n == 0) return;
  from_bf16_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, in, n);
  GOSSAMER_CUDA_LAUNCHED("from_bf16_kernel");
}

void axpby(float* y, float a, const float* x, float b, size_t n) {
  if (n == 0) return;
  axpby_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(y, a, x, b, n);
  GOSSAMER_CUDA_LAUNCHED("axpby_kernel");
}

double sum_squares(const float* x, size_t n) {
  // The kernel writes x only when given a second array.
  return blocked_sum(const_cast<float*>(x), nullptr, true, n);
}

double accumulate_sum_squares(float* y, const float* x, size_t n) {
  return blocked_sum(y, x, true, n);
}

void sum_squares_to(double* out, const float* x, size_t n) {
  if (n == 0) {
    GOSSAMER_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double), stream()));
    return;
  }
  auto* partial = static_cast<double*>(workspace(kSumBlocks * sizeof(double)));
  sum_squares_kernel<<<kSumBlocks, kThreads, 0, stream()>>>(const_cast<float*>(x), nullptr, true, n,
                                                            partial);
  GOSSAMER_CUDA_LAUNCHED("sum_squares_kernel");
  add_partials_kernel<<<1, 1, 0, stream()>>>(partial, kSumBlocks, out);
  GOSSAMER_CUDA_LAUNCHED("add_partials_kernel");
}

double sum(const float* x, size_t n) {
  return blocked_sum(const_cast<float*>(x), nullptr, false, n);
}

}  // namespace gossamer::kernels::cuda
