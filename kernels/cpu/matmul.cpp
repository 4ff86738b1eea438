// Linear layer in nn.Linear layout (out = inp w^T + bias), see matmul.h.
// The three products go through gemm() (deterministic for a fixed backend, shape and thread
// count); the bias terms are plain loops: the forward adds bias row by row after a beta = 0
// gemm, and dbias is reduced over rows by channel blocks, each summed in row order by one
// thread (deterministic whatever the thread count, no atomics). The bf16 products round their
// operands into the scratch and run the same products on the rounded values.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "core/bf16.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"

namespace gossamer::kernels::cpu {

namespace {
constexpr int kChannelBlock = 64;  // output channels per work item of the dbias reduction

// out = in rounded to bf16 and widened back (exact), n values.
template <class T>
void round_to_bf16(T* out, const T* in, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i)
    out[i] =
        static_cast<T>(gossamer::bf16_to_float(gossamer::float_to_bf16(static_cast<float>(in[i]))));
}

// out(n, j) += bias(j), row by row; nothing without a bias.
template <class T>
void add_bias(T* out, const T* bias, int N, int OC) {
  if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    T* __restrict__ o = out + static_cast<size_t>(n) * OC;
#pragma omp simd
    for (int j = 0; j < OC; ++j) o[j] += bias[j];
  }
}

// The float ops on bf16 instructions (gemm_bf16): only when oneDNN has native bf16 kernels here.
template <class T>
bool native_bf16() {
  if constexpr (std::is_same_v<T, float>)
    return gemm_bf16_native();
  else
    return false;
}

// The scratch of the native path: inp (N,C), then dout (N,OC), as bf16.
size_t aligned_bf16(size_t n) {
  return (n + 31) / 32 * 32;
}  // 64-byte aligned offsets

void native_forward(float* out, const float* inp, const uint16_t* w, int N, int C, int OC,
                    void* scratch) {
  auto* inp16 = static_cast<uint16_t*>(scratch);
  to_bf16<float>(inp16, inp, size_t(N) * C);
  gemm_bf16(false, true, N, OC, C, inp16, C, w, C, 0.0f, out, OC);
}

void native_backward(float* dinp, float* dw, const float* dout, const float* inp, const uint16_t* w,
                     int N, int C, int OC, void* scratch) {
  auto* inp16 = static_cast<uint16_t*>(scratch);
  uint16_t* dout16 = inp16 + aligned_bf16(size_t(N) * C);
  to_bf16<float>(inp16, inp, size_t(N) * C);
  to_bf16<float>(dout16, dout, size_t(N) * OC);
  // dinp(N,C) += dout(N,OC) w(OC,C); dw(OC,C) += dout(N,OC)^T inp(N,C)
  if (dinp != nullptr) gemm_bf16(false, false, N, C, OC, dout16, OC, w, C, 1.0f, dinp, C);
  gemm_bf16(true, false, OC, C, N, dout16, OC, inp16, C, 1.0f, dw, C);
}
}  // namespace

// dbias[j] += sum_n dout[n, j], by channel blocks, each summed in row order by one thread.
template <class T>
void bias_backward(T* dbias, const T* dout, int N, int OC);

template <class T>
void matmul_forward(T* out, const T* inp, const T* w, const T* bias, int N, int C, int OC) {
  if (N == 0 || OC == 0) return;
  // out(N,OC) = inp(N,C) * w(OC,C)^T; an empty product (C = 0) is 0
  if (C > 0)
    gemm<T>(false, true, N, OC, C, T(1), inp, C, w, C, T(0), out, OC);
  else
    std::fill_n(out, static_cast<size_t>(N) * OC, T(0));
  add_bias(out, bias, N, OC);
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
  if (dbias != nullptr) bias_backward(dbias, dout, N, OC);
}

template <class T>
void bias_backward(T* dbias, const T* dout, int N, int OC) {
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

template <class T>
size_t matmul_bf16_scratch_bytes(int N, int C, int OC) {
  const size_t n = size_t(N), c = size_t(C), oc = size_t(OC);
  if (native_bf16<T>()) return sizeof(uint16_t) * (aligned_bf16(n * c) + n * oc);
  return sizeof(T) * (n * c + oc * c + n * oc);
}

// Emulated (double, or no bf16 instructions): the scratch holds, in this order, inp (N,C),
// w (OC,C) and dout (N,OC) rounded and widened.
template <class T>
void matmul_bf16_forward(T* out, const T* inp, const uint16_t* w, const T* bias, int N, int C,
                         int OC, void* scratch) {
  if (N == 0 || OC == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (native_bf16<T>() && C > 0) {
      native_forward(out, inp, w, N, C, OC, scratch);
      add_bias(out, bias, N, OC);
      return;
    }
  }
  T* inp_r = static_cast<T*>(scratch);
  T* w_r = inp_r + size_t(N) * C;
  round_to_bf16(inp_r, inp, size_t(N) * C);
  from_bf16<T>(w_r, w, size_t(OC) * C);
  matmul_forward(out, inp_r, w_r, bias, N, C, OC);
}

template <class T>
void matmul_bf16_backward(T* dinp, T* dw, T* dbias, const T* dout, const T* inp, const uint16_t* w,
                          int N, int C, int OC, void* scratch) {
  if (N == 0 || OC == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (native_bf16<T>()) {
      if (C > 0) native_backward(dinp, dw, dout, inp, w, N, C, OC, scratch);
      if (dbias != nullptr) bias_backward(dbias, dout, N, OC);
      return;
    }
  }
  T* inp_r = static_cast<T*>(scratch);
  T* w_r = inp_r + size_t(N) * C;
  T* dout_r = w_r + size_t(OC) * C;
  round_to_bf16(inp_r, inp, size_t(N) * C);
  from_bf16<T>(w_r, w, size_t(OC) * C);
  round_to_bf16(dout_r, dout, size_t(N) * OC);
  matmul_backward<T>(dinp, dw, nullptr, dout_r, inp_r, w_r, N, C, OC);
  if (dbias != nullptr) bias_backward(dbias, dout, N, OC);
}

template void matmul_forward<float>(float*, const float*, const float*, const float*, int, int,
                                    int);
template void matmul_forward<double>(double*, const double*, const double*, const double*, int, int,
                                     int);
template void matmul_backward<float>(float*, float*, float*, const float*, const float*,
                                     const float*, int, int, int);
template void matmul_backward<double>(double*, double*, double*, const double*, const double*,
                                      const double*, int, int, int);

template void matmul_bf16_forward<float>(float*, const float*, const uint16_t*, const float*, int,
                                         int, int, void*);
template void matmul_bf16_forward<double>(double*, const double*, const uint16_t*, const double*,
                                          int, int, int, void*);
template void matmul_bf16_backward<float>(float*, float*, float*, const float*, const float*,
                                          const uint16_t*, int, int, int, void*);
template void matmul_bf16_backward<double>(double*, double*, double*, const double*, const double*,
                                           const uint16_t*, int, int, int, void*);
template size_t matmul_bf16_scratch_bytes<float>(int, int, int);
template size_t matmul_bf16_scratch_bytes<double>(int, int, int);

}  // namespace gossamer::kernels::cpu
