// The CUDA backend's memory (core/memory_ops.h): GPU memory from cudaMalloc, zero-filled on
// allocation (on the ops' stream); free never throws (it runs in destructors); zero by
// cudaMemsetAsync on the ops' stream; upload / download by cudaMemcpyAsync
// on that stream followed by a synchronisation of it, so a copy follows every op issued before
// it and has completed when it returns; copy (device to device) by cudaMemcpyAsync on that
// stream, ordered with the ops. Errors throw gossamer::Error naming the call.
#pragma once

#include "core/memory_ops.h"

namespace gossamer::kernels::cuda {

extern const MemoryOps kMemory;

}  // namespace gossamer::kernels::cuda
