// The CUDA backend's op table: every op of kernels/ops.h by its kernel in kernels/cuda/, and
// the CUDA memory (kernels/cuda/memory.cuh): the buffers its ops take are GPU memory. A run
// selects it with kernels.device = cuda (run/device_ops.h); the op tests run the same
// kernels through a staged table of host buffers (tests/gpu).
// Invariant: every entry is set (checked at compile time in ops_table.cpp).
#pragma once

#include "kernels/ops.h"

namespace gossamer::kernels::cuda {

const OpTable& ops();

}  // namespace gossamer::kernels::cuda
