// MemoryOps: how a backend allocates, zeroes and copies the memory its ops read and write (host
// memory for the CPU backend, GPU memory for CUDA): a table of functions that every op table
// points to (kernels/ops.h: OpTable::memory), so that code holding an op table can own buffers
// its ops can use (Buffer<T>, core/buffer.h) and move data to and from them explicitly.
// Invariants: alloc returns zero-filled memory or throws gossamer::Error; free never throws;
// every function accepts 0 bytes; upload / download have completed when they return (after
// every op issued before them), so the host may reuse its buffer or read the result at once;
// zero and copy are ordered with the ops (after those issued before, before those after).
#pragma once

#include <cstddef>

namespace gossamer {

struct MemoryOps {
  const char* backend;   // "cpu" or "cuda"
  bool host_accessible;  // the host may read and write this memory directly
  void* (*alloc)(size_t bytes);
  void (*free)(void* p, size_t bytes);
  void (*zero)(void* p, size_t bytes);
  void (*upload)(void* dst, const void* host_src, size_t bytes);    // host -> this memory
  void (*download)(void* host_dst, const void* src, size_t bytes);  // this memory -> host
  void (*copy)(void* dst, const void* src, size_t bytes);           // this memory -> this memory
};

}  // namespace gossamer
