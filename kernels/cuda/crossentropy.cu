// Implementation of crossentropy.cuh. A row's threads each own the columns j = tid + k * 256:
// every thread reads only its own columns after the reductions, so probs may alias logits (and
// dlogits logits, in the fused kernel).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/crossentropy.cuh"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/warp_reduce.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;

// The block's reduction of v (sum or max), the same value in every thread; fixed order.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
  v = kMax ? warp_max(v) : warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float r = lane < kThreads / 32 ? shared[lane] : (kMax ? -INFINITY : 0.0f);
  r = kMax ? warp_max(r) : warp_sum(r);
  __syncthreads();  // shared is reused by the next reduction
  return r;
}

// The row's max and sum of exp(x - max), the exponentials written to e (which may alias x);
// x_target read by every thread before the first barrier, so before any thread writes e.
__device__ float2 exp_row(float* e, const float* x, int V, float* shared) {
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < V; j += kThreads) mx = fmaxf(mx, x[j]);
  mx = block_reduce<true>(mx, shared);
  float sum = 0;
  for (int j = threadIdx.x; j < V; j += kThreads) {
    const float v = expf(x[j] - mx);
    e[j] = v;
    sum += v;
  }
  return make_float2(mx, block_reduce<false>(sum, shared));
}

__global__ void crossentropy_forward_kernel(float* losses, float* probs, const float* logits,
                                            const int32_t* targets, int V, int Vp) {
  __shared__ float shared[kThreads / 32];
  const size_t row = blockIdx.x;
  const float* x = logits + row * Vp;
  float* p = probs + row * Vp;
  const float x_target = x[targets[row]];  // before any thread overwrites the row
  const float2 stats = exp_row(p, x, V, shared);
  const float mx = stats.x, sum = stats.y;
  const float inv = 1.0f / sum;
  for (int j = threadIdx.x; j < V; j += kThreads) p[j] *= inv;
  for (int j = V + threadIdx.x; j < Vp; j += kThreads) p[j] = 0.0f;
  if (threadIdx.x == 0) losses[row] = logf(sum) - (x_target - mx);
}

__global__ void crossentropy_backward_kernel(float* dlogits, const float* probs,
                                             const int32_t* targets, float scale, int V, int Vp) {
  const size_t row = blockIdx.x;
  const float* p = probs + row * Vp;
  float* d = dlogits + row * Vp;
  const int target = targets[row];
  // The target's column belongs to one thread, which reads p[target] before writing d[target].
  for (int j = threadIdx.x; j < V; j += kThreads) d[j] = scale * (p[j] - (j == target ? 1.f : 0.f));
  for (int j = V + threadIdx.x; j < Vp; j += kThreads) d[j] = 0.0f;
}

// forward's exponentials, then backward's expression on forward's probabilities, per column.
__global__ void crossentropy_forward_backward_kernel(float* losses, float* dlogits,
                                                     const float* logits, const int32_t* targets,
                                                     float scale, int V, int Vp) {
  __shared__ float shared[kThreads / 32];
  const size_t row = blockIdx.x;
  const float* x = logits + row * Vp;
  float* d = dlogits + row * Vp;
  const int target = targets[row];
  const float x_target = x[target];  // before any thread overwrites the row
  const float2 stats = exp_row(d, x, V, shared);
  const float mx = stats.x, sum = stats.y;
  const float inv = 1.0f / sum;
  for (int j = threadIdx.x; j < V; j += kThreads) {
    const float p = __fmul_rn(d[j], inv);  // rounded as the stored probability: no FMA with - 1
    d[j] = scale * (p - (j == target ? 1.f : 0.f));
  }
  for (int j = V + threadIdx.x; j < Vp; j += kThreads) d[j] = 0.0f;
  if (threadIdx.x == 0) losses[row] = logf(sum) - (x_target - mx);
}

}  // namespace

void crossentropy_forward(float* losses, float* probs, const float* logits, const int32_t* targets,
                          int N, int V, int Vp) {
  if (N == 0) return;
  crossentropy_forward_kernel<<<N, kThreads, 0, stream()>>>(losses, probs, logits, targets, V, Vp);
  GOSSAMER_CUDA_LAUNCHED("crossentropy_forward_kernel");
}

void crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets, float scale,
                           int N, int V, int Vp) {
  if (N == 0) return;
  crossentropy_backward_kernel<<<N, kThreads, 0, stream()>>>(dlogits, probs, targets, scale, V, Vp);
  GOSSAMER_CUDA_LAUNCHED("crossentropy_backward_kernel");
}

void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                   const int32_t* targets, float scale, int N, int V, int Vp) {
  if (N == 0) return;
  crossentropy_forward_backward_kernel<<<N, kThreads, 0, stream()>>>(losses, dlogits, logits,
                                                                     targets, scale, V, Vp);
  GOSSAMER_CUDA_LAUNCHED("crossentropy_forward_backward_kernel");
}

}  // namespace gossamer::kernels::cuda
