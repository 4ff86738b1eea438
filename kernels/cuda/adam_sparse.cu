// Implementation of adam_sparse.cuh (kernels/cpu/adamw.cpp's adamw_update_blocks and
// kernels/cpu/adams.cpp's indexed updates, in float).
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/adam_sparse.cuh"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/warp_reduce.cuh"

namespace gossamer::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kWarpsPerBlock = kThreads / 32;
constexpr size_t kChunk = 4096;  // elements of one block a warp updates (the CPU's split size)

// The values of AdamStep a kernel reads, by value (the struct lives on the host).
struct BlockStep {
  float lr, beta1, beta2, eps, weight_decay;
  long long t;
  WarmupRamp ramp;
  int warmup_steps;
  bool ramp_restarted_only;
};

// Warp w = (block j, chunk c): updates the chunk's coordinates and leaves their sum of squared
// changes in sums[w] (when sums is not null).
__global__ void adamw_blocks_kernel(float* param, const float* grad, float* m, float* v,
                                    const int32_t* blocks, const int32_t* steps, size_t n_blocks,
                                    size_t B, size_t n_param, size_t chunks_per_block, float* sums,
                                    BlockStep hp) {
  const unsigned lane = threadIdx.x % 32;
  const size_t warps = n_blocks * chunks_per_block;
  for (size_t w = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) / 32; w < warps;
       w += size_t(gridDim.x) * kWarpsPerBlock) {
    const size_t j = w / chunks_per_block, c = w % chunks_per_block;
    const size_t begin = size_t(blocks[j]) * B;
    const size_t n = begin + B <= n_param ? B : n_param - begin;
    const long long s = steps[j];
    // The CPU's BiasCorrection and adamw_block constants, in the same precision.
    const float bc1 = 1.0f - static_cast<float>(pow(double(hp.beta1), double(s)));
    const float bc2 = 1.0f - static_cast<float>(pow(double(hp.beta2), double(s)));
    const bool ramped = hp.ramp != WarmupRamp::NONE && hp.warmup_steps > 1 && s < hp.warmup_steps &&
                        (!hp.ramp_restarted_only || s < hp.t);
    const float r = ramped ? float(double(s) / double(hp.warmup_steps)) : 1.0f;
    const float m_scale = hp.ramp == WarmupRamp::MOMENTUM_INPLACE ? r : 1.0f;
    const float step_size = (hp.ramp == WarmupRamp::LR_RAMP ? r : 1.0f) * hp.lr / bc1;
    const float inv_sqrt_bc2 = 1.0f / sqrtf(bc2);
    const float decay = 1.0f - hp.lr * hp.weight_decay;
    const float b1 = hp.beta1, b2 = hp.beta2;
    const size_t end = (c + 1) * kChunk < n ? (c + 1) * kChunk : n;
    float change_sq = 0.0f;
    for (size_t o = c * kChunk + lane; o < end; o += 32) {
      const size_t e = j * B + o;  // compact index of grad, m, v
      const float g = grad[e];
      float mi = b1 * m[e] + (1.0f - b1) * g;
      const float vi = b2 * v[e] + (1.0f - b2) * g * g;
      if (ramped) mi *= m_scale;
      m[e] = mi;
      v[e] = vi;
      const float before = param[begin + o];
      const float after = before * decay - step_size * mi / (sqrtf(vi) * inv_sqrt_bc2 + hp.eps);
      param[begin + o] = after;
      change_sq += (after - before) * (after - before);
    }
    change_sq = warp_sum(change_sq);
    if (sums != nullptr && lane == 0) sums[w] = change_sq;
  }
}

// update_sq[j] = the sum of block j's chunk sums, in chunk order.
__global__ void block_sums_kernel(const float* sums, size_t n_blocks, size_t chunks_per_block,
                                  float* update_sq) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < n_blocks;
       j += size_t(gridDim.x) * blockDim.x) {
    float total = 0.0f;
    for (size_t c = 0; c < chunks_per_block; ++c) total += sums[j * chunks_per_block + c];
    update_sq[j] = total;
  }
}

// AdamS's per-call constants (kernels/cpu/adams.cpp's AdamsConstants, in float).
struct AdamsStep {
  float b1, b2, inv_c, decay, eps, lr;
  long long t;
};

AdamsStep adams_step(const AdamStep& hp) {
  return {hp.beta1,
          hp.beta2,
          hp.code_form
              ? 1.0f / (1.0f - static_cast<float>(std::pow(double(hp.beta1), double(hp.t))))
              : 1.0f,
          1.0f - hp.lr * hp.weight_decay,
          hp.eps,
          hp.lr,
          hp.t};
}

// How adams_update_indexed applies g (AdamStep's fields read by it alone).
struct IndexedRule {
  Accumulated accumulated;
  bool momentum_restarts, age_normaliser, lazy_decay, frozen_normaliser;
};

__global__ void adams_indexed_kernel(float* param, const uint32_t* pidx, const uint32_t* idx,
                                     const float* g, size_t k, float* m, float* last,
                                     const uint8_t* decay, float* den_sq, float* dir, AdamsStep c,
                                     IndexedRule rule) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < k;
       j += size_t(gridDim.x) * blockDim.x) {
    const size_t i = idx[j];
    const long long a = last[i] < 0 ? 1 : max(1ll, c.t - (long long)(last[i]));
    const float b1 = c.b1, b2 = c.b2, inv_c = c.inv_c;
    const float gj = g[j];
    // kernels/cpu/adams.cpp's indexed_move.
    float mt, den, num;
    if (rule.accumulated == Accumulated::ONE_GRADIENT) {
      const float gn = rule.age_normaliser && a > 1 ? gj / float(a) : gj;
      const float prev = m[i] * inv_c;
      mt = b1 * m[i] + (1.0f - b1) * gj;
      den = sqrtf(b2 * prev * prev + (1.0f - b2) * gn * gn) + c.eps;
      num = mt;
    } else {
      const float b1a = a == 1 ? b1 : static_cast<float>(pow(double(b1), double(a)));
      const float S = b1 * (1.0f - b1a) / (1.0f - b1);
      const bool momentum = rule.accumulated == Accumulated::MOMENTUM_SUM;
      const float base = momentum && rule.momentum_restarts ? 0.0f : m[i];
      const float gbar = momentum ? (gj - base * S) / (float(a) - S) : gj / float(a);
      mt = b1a * base + (1.0f - b1a) * gbar;
      const float prev = (a == 1 ? base : (mt - (1.0f - b1) * gbar) / b1) * inv_c;
      den = sqrtf(b2 * prev * prev + (1.0f - b2) * gbar * gbar) + c.eps;
      num = momentum ? gj : base * S + gbar * (float(a) - S);
    }
    m[i] = mt;
    if (den_sq != nullptr) {
      if (rule.frozen_normaliser && den_sq[i] > 0)
        den = sqrtf(den_sq[i]);
      else if (!rule.frozen_normaliser)
        den_sq[i] = den_sq[i] == 0 ? den * den : b2 * den_sq[i] + (1.0f - b2) * den * den;
    }
    const float keep = !decay[i] ? 1.0f
                       : !rule.lazy_decay || a == 1
                           ? c.decay
                           : static_cast<float>(pow(double(c.decay), double(a)));
    float& p = param[pidx[j]];
    p = p * keep - c.lr * (num * inv_c) / den;
    if (dir != nullptr) dir[pidx[j]] = (mt * inv_c) / den;
    last[i] = float(c.t);
  }
}

__global__ void adams_from_momentum_kernel(float* param, const uint32_t* pidx, float* m_last,
                                           float* last, const uint32_t* idx, const float* m_now,
                                           const uint8_t* decay, size_t k, AdamsStep c,
                                           int catch_up_max) {
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < k;
       j += size_t(gridDim.x) * blockDim.x) {
    const size_t i = idx[j];
    const long long a = max(1ll, c.t - (long long)(last[i]));
    const float b1 = c.b1, b2 = c.b2;
    const float b1a = a == 1 ? b1 : static_cast<float>(pow(double(b1), double(a)));
    const float mt = m_now[j];
    const float gbar = (mt - b1a * m_last[i]) / (1.0f - b1a);
    const float prev = (mt - (1.0f - b1) * gbar) / b1 * c.inv_c;
    const float den = sqrtf(b2 * prev * prev + (1.0f - b2) * gbar * gbar) + c.eps;
    const long long s = min(a, (long long)max(1, catch_up_max));
    const float keep = !decay[i] ? 1.0f
                       : s == 1  ? c.decay
                                 : static_cast<float>(pow(double(c.decay), double(s)));
    float& p = param[pidx[j]];
    p = p * keep - float(s) * c.lr * (mt * c.inv_c) / den;
    m_last[i] = mt;
    last[i] = float(c.t);
  }
}

}  // namespace

void adamw_update_blocks(float* param, const float* grad, float* m, float* v, const int32_t* blocks,
                         const int32_t* steps, size_t n_blocks, size_t block_size, size_t n_param,
                         float* update_sq, const AdamStep& hp) {
  if (n_blocks == 0) return;
  if (block_size == 0) {  // empty blocks: no change, sums 0 (as the CPU op)
    if (update_sq != nullptr)
      GOSSAMER_CUDA_CHECK(cudaMemsetAsync(update_sq, 0, n_blocks * sizeof(float), stream()));
    return;
  }
  const size_t chunks_per_block = (block_size + kChunk - 1) / kChunk;
  const size_t warps = n_blocks * chunks_per_block;
  // One chunk per block: the warps write the blocks' sums directly.
  float* sums = update_sq == nullptr || chunks_per_block == 1
                    ? update_sq
                    : static_cast<float*>(workspace(warps * sizeof(float)));
  const BlockStep step{hp.lr,   hp.beta1,        hp.beta2,
                       hp.eps,  hp.weight_decay, hp.t,
                       hp.ramp, hp.warmup_steps, hp.ramp_restarted_only};
  adamw_blocks_kernel<<<grid_for(warps, kWarpsPerBlock), kThreads, 0, stream()>>>(
      param, grad, m, v, blocks, steps, n_blocks, block_size, n_param, chunks_per_block, sums,
      step);
  GOSSAMER_CUDA_LAUNCHED("adamw_blocks_kernel");
  if (update_sq != nullptr && chunks_per_block > 1) {
    block_sums_kernel<<<grid_for(n_blocks, kThreads), kThreads, 0, stream()>>>(
        sums, n_blocks, chunks_per_block, update_sq);
    GOSSAMER_CUDA_LAUNCHED("block_sums_kernel");
  }
}

void adams_update_indexed(float* param, const uint32_t* pidx, const uint32_t* idx, const float* g,
                          size_t k, const IndexedAdamsState<float>& st, const AdamStep& hp) {
  if (k == 0) return;
  const IndexedRule rule{hp.accumulated, hp.momentum_restarts, hp.age_normaliser, hp.lazy_decay,
                         hp.frozen_normaliser};
  adams_indexed_kernel<<<grid_for(k, kThreads), kThreads, 0, stream()>>>(
      param, pidx, idx, g, k, st.m, st.last, st.decay, st.den_sq, st.dir, adams_step(hp), rule);
  GOSSAMER_CUDA_LAUNCHED("adams_indexed_kernel");
}

void adams_update_from_momentum(float* param, const uint32_t* pidx, float* m_last, float* last,
                                const uint32_t* idx, const float* m_now, const uint8_t* decay,
                                size_t k, const AdamStep& hp) {
  if (k == 0) return;
  adams_from_momentum_kernel<<<grid_for(k, kThreads), kThreads, 0, stream()>>>(
      param, pidx, m_last, last, idx, m_now, decay, k, adams_step(hp), hp.catch_up_max);
  GOSSAMER_CUDA_LAUNCHED("adams_from_momentum_kernel");
}

}  // namespace gossamer::kernels::cuda
