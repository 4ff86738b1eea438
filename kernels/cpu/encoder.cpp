// Token + position embedding (GPT-2) or token embedding alone (Llama), see encoder.h.
// The backward is a scatter-add into dwte rows chosen by the tokens; two tokens of a batch may
// be equal, so rows cannot be split between threads. Instead each thread owns a fixed slice of
// the channel dimension and walks all (b,t) in order: every dwte/dwpe element is summed in the
// same order whatever the thread count, with no atomics.
#include "kernels/cpu/encoder.h"

#include <algorithm>
#include <cstddef>

namespace gossamer::kernels::cpu {

namespace {
constexpr int kChannelBlock = 64;  // channels per work item of the backward (4 cache lines)
}  // namespace

template <class Real>
void encoder_forward(Real* out, const int32_t* tokens, const Real* wte, const Real* wpe, int B,
                     int T, int C) {
#pragma omp parallel for schedule(static)
  for (int bt = 0; bt < B * T; ++bt) {
    const int t = bt % T;
    Real* __restrict__ o = out + static_cast<size_t>(bt) * C;
    const Real* __restrict__ e = wte + static_cast<size_t>(tokens[bt]) * C;
    if (wpe == nullptr) {
#pragma omp simd
      for (int c = 0; c < C; ++c) o[c] = e[c];
      continue;
    }
    const Real* __restrict__ p = wpe + static_cast<size_t>(t) * C;
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
  }
}

template <class Real>
void encoder_backward(Real* dwte, Real* dwpe, const Real* dout, const int32_t* tokens, int B, int T,
                      int C) {
  const int nblocks = (C + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < nblocks; ++blk) {
    const int c0 = blk * kChannelBlock;
    const int nc = std::min(kChannelBlock, C - c0);
    for (int bt = 0; bt < B * T; ++bt) {
      const int t = bt % T;
      const Real* __restrict__ d = dout + static_cast<size_t>(bt) * C + c0;
      Real* __restrict__ e = dwte + static_cast<size_t>(tokens[bt]) * C + c0;
      if (dwpe == nullptr) {
#pragma omp simd
        for (int c = 0; c < nc; ++c) e[c] += d[c];
        continue;
      }
      Real* __restrict__ p = dwpe + static_cast<size_t>(t) * C + c0;
#pragma omp simd
      for (int c = 0; c < nc; ++c) {
        e[c] += d[c];
        p[c] += d[c];
      }
    }
  }
}

template void encoder_forward<float>(float*, const int32_t*, const float*, const float*, int, int,
                                     int);
template void encoder_forward<double>(double*, const int32_t*, const double*, const double*, int,
                                      int, int);
template void encoder_backward<float>(float*, float*, const float*, const int32_t*, int, int, int);
template void encoder_backward<double>(double*, double*, const double*, const int32_t*, int, int,
                                       int);

}  // namespace gossamer::kernels::cpu
