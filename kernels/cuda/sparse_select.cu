// Implementation of sparse_select.cuh.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/sparse_select.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / 32;
constexpr unsigned kRounds = 16;
constexpr size_t kTile = size_t{kThreads} * kRounds;  // elements per tile of the write pass
constexpr unsigned kScanThreads = 1024;

// The radix select's running state, on the device: the key bits chosen so far (prefix, under
// mask), how many of the keys that share them are still to be selected, and how many keys are
// above them. After the four passes: threshold = prefix, `above` keys are larger, and the
// `need` lowest-indexed keys equal to it complete the k.
struct SelectState {
  uint32_t prefix, mask, need, above;
};

// A 32-bit key that orders like the CPU's comparison: NaN as -inf, -0 as +0; larger float,
// larger key.
__device__ __forceinline__ uint32_t order_key(float x) {
  uint32_t b = __float_as_uint(x);
  if (x != x) b = 0xff800000u;  // -inf
  if ((b << 1) == 0) b = 0;     // -0 -> +0
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__global__ void init_state_kernel(SelectState* st, uint32_t k) {
  *st = SelectState{0, 0, k, 0};
}

// hist[d] += the number of keys that match the prefix and have digit d at `shift`.
__global__ void histogram_kernel(const float* scores, size_t n, const SelectState* st, int shift,
                                 uint32_t* hist) {
  __shared__ uint32_t local[256];
  for (unsigned d = threadIdx.x; d < 256; d += blockDim.x) local[d] = 0;
  __syncthreads();
  const uint32_t prefix = st->prefix, mask = st->mask;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t key = order_key(scores[i]);
    if ((key & mask) == prefix) atomicAdd(&local[(key >> shift) & 255u], 1u);
  }
  __syncthreads();
  for (unsigned d = threadIdx.x; d < 256; d += blockDim.x)
    if (local[d]) atomicAdd(&hist[d], local[d]);
}

// Chooses the digit at `shift` that holds the need-th largest of the matching keys.
__global__ void select_digit_kernel(const uint32_t* hist, SelectState* st, int shift) {
  uint32_t above = 0;
  for (int d = 255; d >= 0; --d) {
    if (above + hist[d] >= st->need) {
      st->prefix |= uint32_t(d) << shift;
      st->mask |= 255u << shift;
      st->need -= above;
      st->above += above;
      return;
    }
    above += hist[d];
  }
}

// Per tile: the keys above the threshold and equal to it.
__global__ void tile_counts_kernel(const float* scores, size_t n, size_t tiles,
                                   const SelectState* st, uint32_t* above, uint32_t* ties) {
  __shared__ uint32_t warp_above[kWarps], warp_ties[kWarps];
  const uint32_t threshold = st->prefix;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    uint32_t a = 0, e = 0;
    for (unsigned r = 0; r < kRounds; ++r) {
      const size_t i = t * kTile + r * kThreads + threadIdx.x;
      if (i < n) {
        const uint32_t key = order_key(scores[i]);
        a += key > threshold;
        e += key == threshold;
      }
    }
    a = __reduce_add_sync(0xffffffffu, a);
    e = __reduce_add_sync(0xffffffffu, e);
    if (lane == 0) warp_above[warp] = a, warp_ties[warp] = e;
    __syncthreads();
    if (threadIdx.x == 0) {
      uint32_t sa = 0, se = 0;
      for (unsigned w = 0; w < kWarps; ++w) sa += warp_above[w], se += warp_ties[w];
      above[t] = sa;
      ties[t] = se;
    }
    __syncthreads();
  }
}

// Exclusive scan of v[0..count) in place by one block: each thread sums a contiguous range,
// thread 0 scans the range sums, each thread rewrites its range.
__device__ void block_exclusive_scan(uint32_t* v, size_t count, uint32_t* range_sums) {
  const size_t per = (count + kScanThreads - 1) / kScanThreads;
  const size_t begin = threadIdx.x * per, end = begin + per < count ? begin + per : count;
  uint32_t sum = 0;
  for (size_t t = begin; t < end; ++t) sum += v[t];
  range_sums[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t run = 0;
    for (unsigned r = 0; r < kScanThreads; ++r) {
      const uint32_t s = range_sums[r];
      range_sums[r] = run;
      run += s;
    }
  }
  __syncthreads();
  uint32_t run = range_sums[threadIdx.x];
  for (size_t t = begin; t < end; ++t) {
    const uint32_t x = v[t];
    v[t] = run;
    run += x;
  }
  __syncthreads();
}

// ties_before[t] = the ties in tiles before t; offset[t] = the output position of tile t's first
// selected index (the selected of earlier tiles: their keys above, and their ties while the
// lowest-indexed `need` last).
__global__ void tile_offsets_kernel(const uint32_t* above, const uint32_t* ties, size_t tiles,
                                    const SelectState* st, uint32_t* ties_before,
                                    uint32_t* offset) {
  __shared__ uint32_t range_sums[kScanThreads];
  const size_t per = (tiles + kScanThreads - 1) / kScanThreads;
  const size_t begin = threadIdx.x * per, end = begin + per < tiles ? begin + per : tiles;
  for (size_t t = begin; t < end; ++t) ties_before[t] = ties[t];
  __syncthreads();
  block_exclusive_scan(ties_before, tiles, range_sums);
  const uint32_t need = st->need;
  for (size_t t = begin; t < end; ++t) {
    const uint32_t left = need > ties_before[t] ? need - ties_before[t] : 0;
    offset[t] = above[t] + (ties[t] < left ? ties[t] : left);
  }
  __syncthreads();
  block_exclusive_scan(offset, tiles, range_sums);
}

// How many threads of the block before this one have `flag` set; `total` receives the block's
// count. Every thread of the block calls it; warp_counts (kWarps slots of shared memory) must
// not be rewritten before the next __syncthreads() after the call.
__device__ uint32_t block_rank(bool flag, uint32_t* warp_counts, uint32_t& total) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t ballot = __ballot_sync(0xffffffffu, flag);
  if (lane == 0) warp_counts[warp] = __popc(ballot);
  __syncthreads();
  uint32_t rank = __popc(ballot & ((1u << lane) - 1u));
  total = 0;
  for (unsigned w = 0; w < kWarps; ++w) {
    rank += w < warp ? warp_counts[w] : 0;
    total += warp_counts[w];
  }
  return rank;
}

// Writes the selected indices of each tile, in index order, from the tile's offset.
__global__ void write_selected_kernel(const float* scores, size_t n, size_t tiles,
                                      const SelectState* st, const uint32_t* ties_before,
                                      const uint32_t* offset, uint32_t* out) {
  __shared__ uint32_t warp_ties[kWarps], warp_selected[kWarps];
  const uint32_t threshold = st->prefix, need = st->need;
  for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    uint32_t ties_run = ties_before[t], out_run = offset[t];  // the same in every thread
    for (unsigned r = 0; r < kRounds; ++r) {
      const size_t i = t * kTile + r * kThreads + threadIdx.x;
      const uint32_t key = i < n ? order_key(scores[i]) : 0;
      const bool tie = i < n && key == threshold;
      uint32_t round_ties = 0, round_selected = 0;
      const uint32_t tie_rank = ties_run + block_rank(tie, warp_ties, round_ties);
      const bool selected = (i < n && key > threshold) || (tie && tie_rank < need);
      const uint32_t pos = out_run + block_rank(selected, warp_selected, round_selected);
      if (selected) out[pos] = uint32_t(i);
      ties_run += round_ties;
      out_run += round_selected;
      __syncthreads();  // the shared counts are rewritten next round
    }
  }
}

__global__ void iota_kernel(uint32_t* out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = uint32_t(i);
}

__global__ void gather_kernel(float* out, const float* x, const uint32_t* idx, size_t k) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < k;
       j += size_t(gridDim.x) * blockDim.x)
    out[j] = x[idx[j]];
}

__global__ void scatter_kernel(float* x, const float* in, const uint32_t* idx, size_t k) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < k;
       j += size_t(gridDim.x) * blockDim.x)
    x[idx[j]] = in[j];
}

__global__ void scale_at_kernel(float* x, const uint32_t* idx, size_t k, float s) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < k;
       j += size_t(gridDim.x) * blockDim.x)
    x[idx[j]] = s == 0.0f ? 0.0f : s * x[idx[j]];
}

// Grid of the tile kernels: a block per tile, up to a cap (grid-stride beyond).
unsigned tile_grid(size_t tiles) {
  const size_t cap = size_t{65535} * 16;
  return unsigned(tiles < cap ? tiles : cap);
}

}  // namespace

void top_k_indices(const float* scores, size_t n, size_t k, uint32_t* out) {
  if (k > n || n > size_t{0xffffffffu})
    throw Error("top-k (cuda): k = " + std::to_string(k) + " of " + std::to_string(n) +
                " scores (k <= n < 2^32 required)");
  if (k == 0) return;
  if (k == n) {
    iota_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(out, n);
    GOSSAMER_CUDA_LAUNCHED("iota_kernel");
    return;
  }
  const size_t tiles = (n + kTile - 1) / kTile;
  // Workspace: the state, the histogram, then four arrays of one count per tile.
  const size_t header = 64 + 256 * sizeof(uint32_t);
  char* ws = static_cast<char*>(workspace(header + 4 * tiles * sizeof(uint32_t)));
  auto* st = reinterpret_cast<SelectState*>(ws);
  auto* hist = reinterpret_cast<uint32_t*>(ws + 64);
  auto* above = reinterpret_cast<uint32_t*>(ws + header);
  uint32_t* ties = above + tiles;
  uint32_t* ties_before = ties + tiles;
  uint32_t* offset = ties_before + tiles;
  init_state_kernel<<<1, 1, 0, stream()>>>(st, uint32_t(k));
  GOSSAMER_CUDA_LAUNCHED("init_state_kernel");
  for (int shift = 24; shift >= 0; shift -= 8) {
    GOSSAMER_CUDA_CHECK(cudaMemsetAsync(hist, 0, 256 * sizeof(uint32_t), stream()));
    histogram_kernel<<<grid_for(n, kThreads), kThreads, 0, stream()>>>(scores, n, st, shift, hist);
    GOSSAMER_CUDA_LAUNCHED("histogram_kernel");
    select_digit_kernel<<<1, 1, 0, stream()>>>(hist, st, shift);
    GOSSAMER_CUDA_LAUNCHED("select_digit_kernel");
  }
  tile_counts_kernel<<<tile_grid(tiles), kThreads, 0, stream()>>>(scores, n, tiles, st, above,
                                                                  ties);
  GOSSAMER_CUDA_LAUNCHED("tile_counts_kernel");
  tile_offsets_kernel<<<1, kScanThreads, 0, stream()>>>(above, ties, tiles, st, ties_before,
                                                        offset);
  GOSSAMER_CUDA_LAUNCHED("tile_offsets_kernel");
  write_selected_kernel<<<tile_grid(tiles), kThreads, 0, stream()>>>(scores, n, tiles, st,
                                                                     ties_before, offset, out);
  GOSSAMER_CUDA_LAUNCHED("write_selected_kernel");
}

void gather(float* out, const float* x, const uint32_t* idx, size_t k) {
  if (k == 0) return;
  gather_kernel<<<grid_for(k, kThreads), kThreads, 0, stream()>>>(out, x, idx, k);
  GOSSAMER_CUDA_LAUNCHED("gather_kernel");
}

void scatter(float* x, const float* in, const uint32_t* idx, size_t k) {
  if (k == 0) return;
  scatter_kernel<<<grid_for(k, kThreads), kThreads, 0, stream()>>>(x, in, idx, k);
  GOSSAMER_CUDA_LAUNCHED("scatter_kernel");
}

void scale_at(float* x, const uint32_t* idx, size_t k, float s) {
  if (k == 0) return;
  scale_at_kernel<<<grid_for(k, kThreads), kThreads, 0, stream()>>>(x, idx, k, s);
  GOSSAMER_CUDA_LAUNCHED("scale_at_kernel");
}

}  // namespace gossamer::kernels::cuda
