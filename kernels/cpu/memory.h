// The CPU backend's memory (core/memory_ops.h): host memory from host_alloc (64-byte aligned,
// zero-filled, huge pages advised; core/buffer.h), zeroed with memset, "uploads" and
// "downloads" that are plain copies. The op tables of kernels/cpu point to it.
#pragma once

#include "core/memory_ops.h"

namespace gossamer::kernels::cpu {

// A namespace-scope object, so that the constexpr op tables can point to it.
extern const MemoryOps kMemory;

}  // namespace gossamer::kernels::cpu
