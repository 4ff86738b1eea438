// Implementation of encoder.cuh.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <cstdint>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/encoder.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;

__global__ void encoder_forward_kernel(float* out, const int32_t* tokens, const float* wte,
                                       const float* wpe, int T, int C, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t bt = i / C;
    const int c = int(i % C), t = int(bt % T);
    const float e = wte[size_t(tokens[bt]) * C + c];
    out[i] = wpe ? e + wpe[size_t(t) * C + c] : e;
  }
}

__global__ void encoder_backward_wpe_kernel(float* dwpe, const float* dout, int B, int T, int C) {
  const size_t n = size_t(T) * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float s = dwpe[i];  // added into in b order, as the CPU op does (its bits)
    for (int b = 0; b < B; ++b) s += dout[size_t(b) * n + i];
    dwpe[i] = s;
  }
}

// positions[i] = i.
__global__ void iota_kernel(int32_t* positions, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    positions[i] = i;
}

// Block i (of the sorted pairs) handles token keys[i] if i starts its run of equal keys:
// dwte[token, c] += dout[positions[j], c] for the run's j in order (positions increasing).
__global__ void encoder_backward_wte_sorted_kernel(float* dwte, const float* dout,
                                                   const int32_t* keys, const int32_t* positions,
                                                   int BT, int C) {
  const int i = blockIdx.x;
  if (i >= BT || (i > 0 && keys[i] == keys[i - 1])) return;
  const int32_t token = keys[i];
  int end = i + 1;
  while (end < BT && keys[end] == token) ++end;
  float* row = dwte + size_t(token) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = row[c];
    for (int j = i; j < end; ++j) acc += dout[size_t(positions[j]) * C + c];
    row[c] = acc;
  }
}

// The (token, position) pairs of B*T tokens sorted by token, stably, in the workspace.
struct SortedTokens {
  const int32_t* keys;
  const int32_t* positions;
};

size_t aligned(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

SortedTokens sort_tokens(const int32_t* tokens, int BT) {
  size_t temp_bytes = 0;
  GOSSAMER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, temp_bytes, tokens, static_cast<int32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), BT, 0,
      int(sizeof(int32_t) * 8), stream()));
  const size_t array = aligned(size_t(BT) * sizeof(int32_t));
  auto* base = static_cast<unsigned char*>(workspace(3 * array + aligned(temp_bytes)));
  auto* keys = reinterpret_cast<int32_t*>(base);
  auto* positions_in = reinterpret_cast<int32_t*>(base + array);
  auto* positions = reinterpret_cast<int32_t*>(base + 2 * array);
  void* temp = base + 3 * array;
  iota_kernel<<<grid_for(size_t(BT), kThreads), kThreads, 0, stream()>>>(positions_in, BT);
  GOSSAMER_CUDA_LAUNCHED("iota_kernel");
  GOSSAMER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, tokens, keys, positions_in,
                                                      positions, BT, 0, int(sizeof(int32_t) * 8),
                                                      stream()));
  return {keys, positions};
}

}  // namespace

void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                     int T, int C) {
  const size_t n = size_t(B) * T * C;
  if (n == 0) return;
  encoder_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, tokens, wte, wpe, T,
                                                                           C, n);
  GOSSAMER_CUDA_LAUNCHED("encoder_forward_kernel");
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                      int T, int C) {
  if (size_t(B) * T * C == 0) return;
  const int BT = B * T;
  const SortedTokens sorted = sort_tokens(tokens, BT);
  encoder_backward_wte_sorted_kernel<<<unsigned(BT), kThreads, 0, stream()>>>(
      dwte, dout, sorted.keys, sorted.positions, BT, C);
  GOSSAMER_CUDA_LAUNCHED("encoder_backward_wte_sorted_kernel");
  if (dwpe == nullptr) return;
  encoder_backward_wpe_kernel<<<grid_for(size_t(T) * C, kThreads), kThreads, 0, stream()>>>(
      dwpe, dout, B, T, C);
  GOSSAMER_CUDA_LAUNCHED("encoder_backward_wpe_kernel");
}

}  // namespace gossamer::kernels::cuda
