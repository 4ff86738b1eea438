// The outer Nesterov step of DiLoCo (optim/diloco.h) and of GASLoC on the complete graph:
// PyTorch's SGD with nesterov=True applied to the pseudo-gradient delta,
//   m <- mu m + delta;  anchor <- anchor - lr (delta + mu m)
// element by element in T (one rounding per operation, in this order). `delta` is only read.
#pragma once

#include <cstddef>

namespace gossamer::kernels::cpu {

template <class T>
void nesterov_outer(T* anchor, T* m, const T* delta, T lr, T mu, size_t n);

}  // namespace gossamer::kernels::cpu
