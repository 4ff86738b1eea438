// Linear layer in nn.Linear layout (out = inp w^T + bias), see matmul.h.
// The three products go through gemm() (deterministic for a fixed backend, shape and thread
// count); the bias terms are plain loops: the forward adds bias row by row after a beta = 0
// gemm, and dbias is reduced over rows by channel blocks, each summed in row order by one
// thread (deterministic whatever the thread count, no atomics).
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <cstddef>

#include "kernels/cpu/gemm.h"

namespace gossamer::kernels::cpu {

namespace {
constexpr int kChannelBlock = 64;  // output channels per work item of the dbias reduction
}  // namespace

template <class T>
void matmul_forward(T* out, const T* inp, const T* w, const T* bias, int N, int C, int OC) {
  if (N == 0 || OC == 0) return;
  // out(N,OC) = inp(N,C) * w(OC,C)^T; an empty product (C = 0) is 0
  if (C > 0)
    gemm<T>(false, true, N, OC, C, T(1), inp, C, w, C, T(0), out, OC);
  else
    std::fill_n(out, static_cast<size_t>(N) * OC, T(0));
  if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    T* __restrict__ o = out + static_cast<size_t>(n) * OC;
#pragma omp simd
    for (int j = 0; j < OC; ++j) o[j] += bias[j];
  }
}

template <class T>
void matmul_backward(T* dinp, T* dw, T* dbias, const T* dout, const T* inp, const T* w, int N,
                     int C, int OC) {
  if (N == 0 || OC == 0) return;
  if (C > 0) {  // an empty product (C = 0) has no dinp or dw, but out = bias still has a dbias
    // dinp(N,C) += dout(N,OC) * w(OC,C)
    if (dinp != nullptr) gemm<T>(false, false, N, C, OC, T(1), dout, OC, w, C, T(1), dinp, C);
    // dw(OC,C) += dout(N,OC)^T * inp(N,C)
    gemm<T>(true, false, OC, C, N, T(1), dout, OC, inp, C, T(1), dw, C);
  }
  if (dbias == nullptr) return;
  const int nblocks = (OC + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < nblocks; ++blk) {
    const int j0 = blk * kChannelBlock;
    const int nj = std::min(kChannelBlock, OC - j0);
    T* __restrict__ db = dbias + j0;
    for (int n = 0; n < N; ++n) {
      const T* __restrict__ g = dout + static_cast<size_t>(n) * OC + j0;
#pragma omp simd
      for (int j = 0; j < nj; ++j) db[j] += g[j];
    }
  }
}

template void matmul_forward<float>(float*, const float*, const float*, const float*, int, int,
                                    int);
template void matmul_forward<double>(double*, const double*, const double*, const double*, int, int,
                                     int);
template void matmul_backward<float>(float*, float*, float*, const float*, const float*,
                                     const float*, int, int, int);
template void matmul_backward<double>(double*, double*, double*, const double*, const double*,
                                      const double*, int, int, int);

}  // namespace gossamer::kernels::cpu
