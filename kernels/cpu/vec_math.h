// Vectorisation helpers for the CPU ops (private to kernels/cpu/*.cpp).
// GCC calls libm's scalar expf inside loops unless -ffast-math is on, which would make the
// softmax, cross-entropy and GELU loops scalar. vec_exp(float) is branch-free plain C++ that
// GCC vectorises inside `#pragma omp simd` loops: Cody-Waite reduction x = n ln2 + r,
// |r| <= ln2/2, the Cephes expf polynomial, and 2^n built in the exponent bits.
// Invariant: max error ~1 ulp (measured 1.01) on [-87.33, 88.0]; exactly 0 below (true value <
// FLT_MIN), +inf above 88.0 (the true value is within a factor 2 of FLT_MAX up to 88.72, a range no
// op uses), NaN in -> NaN out. vec_exp(double) is std::exp (the fp64 reference path).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace gossamer::kernels::cpu {

// Lanes of a 512-bit vector. GCC's tuning for AVX-512 Intel cores prefers 256-bit vectors;
// `#pragma omp simd simdlen(kVecLanes<T>)` requests full-width vectors in the hot loops
// (measured ~25% faster for the exp loops; on narrower machines GCC splits them).
template <class T>
inline constexpr int kVecLanes = 64 / sizeof(T);

inline float vec_exp(float x) {
  constexpr float kLo = -87.33654f;  // ln(FLT_MIN): 2^n stays a normal number
  constexpr float kHi = 88.0f;       // n <= 127
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // few mantissa bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float xc = x < kLo ? kLo : x;          // written as compares so that NaN passes through
  xc = xc > kHi ? kHi : xc;
  const float n = (xc * kLog2e + kRound) - kRound;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const float two_n = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  float y = p * two_n;
  y = x < kLo ? 0.0f : y;
  y = x > kHi ? std::numeric_limits<float>::infinity() : y;
  return y;
}

inline double vec_exp(double x) {
  return std::exp(x);
}

}  // namespace gossamer::kernels::cpu
