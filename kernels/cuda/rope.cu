// Implementation of rope.cuh.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/rope.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;

// dir = +1: rotate by +angle (forward); -1: by -angle (backward).
__global__ void rope_kernel(float* x, int T, int n_heads, int hs, int row_stride, double theta,
                            int dir, size_t n_pairs) {
  const int half = hs / 2;
  for (size_t p = blockIdx.x * size_t(blockDim.x) + threadIdx.x; p < n_pairs;
       p += size_t(gridDim.x) * blockDim.x) {
    const int i = int(p % half);
    const size_t head = p / half;  // (b, t, h) flattened
    const int h = int(head % n_heads);
    const size_t bt = head / n_heads;
    const int t = int(bt % T);
    const double angle = double(t) * pow(theta, -2.0 * i / hs);
    const float c = float(cos(angle)), s = float(dir * sin(angle));
    float* lo = x + bt * size_t(row_stride) + size_t(h) * hs + i;
    float* hi = lo + half;
    const float a = *lo, b = *hi;
    *lo = a * c - b * s;
    *hi = b * c + a * s;
  }
}

void rope_apply(float* x, int B, int T, int n_heads, int hs, int row_stride, double theta, int dir,
                const char* name) {
  const size_t n_pairs = size_t(B) * T * n_heads * (hs / 2);
  if (n_pairs == 0) return;
  rope_kernel<<<grid_for(n_pairs, kThreads), kThreads, 0, stream()>>>(x, T, n_heads, hs, row_stride,
                                                                      theta, dir, n_pairs);
  GOSSAMER_CUDA_LAUNCHED(name);
}

}  // namespace

void rope_forward(float* x, int B, int T, int n_heads, int head_dim, int row_stride, double theta) {
  rope_apply(x, B, T, n_heads, head_dim, row_stride, theta, +1, "rope_kernel (forward)");
}

void rope_backward(float* dx, int B, int T, int n_heads, int head_dim, int row_stride,
                   double theta) {
  rope_apply(dx, B, T, n_heads, head_dim, row_stride, theta, -1, "rope_kernel (backward)");
}

}  // namespace gossamer::kernels::cuda
