// Warp-level reductions shared by the CUDA kernels: a butterfly over the 32 lanes with
// __shfl_xor_sync, so every lane ends with the same value, combined in the same fixed order
// on every run (deterministic). Device code; include from .cu files only.
#pragma once

namespace gossamer::kernels::cuda {

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

}  // namespace gossamer::kernels::cuda
