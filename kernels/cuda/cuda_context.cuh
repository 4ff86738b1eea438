// What every CUDA op shares: error checking, the stream ops launch on, and a grow-only device
// workspace for multi-pass reductions. Declarations only (plain C++): included by .cu files and
// by host code that sets the stream.
// Invariants: every CUDA runtime call and every launch is checked, and a failure throws
// gossamer::Error naming the call, file and line; ops launch on stream() only and do not
// synchronise unless they return a value to the host (sum_squares); the workspace grows only
// when a larger call arrives (the first training step), never shrinks, and is one buffer
// per process, so ops that use it must not run concurrently on several streams.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace gossamer::kernels::cuda {

// Throws gossamer::Error "<what> at <file>:<line>: <CUDA error string>" unless e == cudaSuccess.
void cuda_check(cudaError_t e, const char* what, const char* file, int line);

// GPUs visible to this process; 0 when the CUDA runtime reports an error (no driver, no device),
// whose sticky error it clears. The one place that asks (the comm backends use it too).
int visible_gpus();

// Makes GPU `device` current for this thread (cudaSetDevice, checked): every later allocation
// and launch of this thread goes there. One GPU per rank: the trainer passes the node-local rank.
void use_device(int device);

// The stream every op launches on (default: the legacy default stream, 0).
cudaStream_t stream();
void set_stream(cudaStream_t s);

// A device buffer of at least `bytes` bytes, valid until the next call with a larger size.
void* workspace(size_t bytes);

// Blocks per launch for a grid-stride loop over n elements with `threads` threads per block
// (at least 1, at most 65535 * 16: enough to fill any current GPU several times over).
inline unsigned grid_for(size_t n, unsigned threads) {
  const size_t blocks = (n + threads - 1) / threads;
  const size_t cap = size_t{65535} * 16;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks < cap ? blocks : cap));
}

}  // namespace gossamer::kernels::cuda

#define GOSSAMER_CUDA_CHECK(expr) \
  ::gossamer::kernels::cuda::cuda_check((expr), #expr, __FILE__, __LINE__)
// After a <<<...>>> launch: checks the launch configuration (not the kernel's completion).
#define GOSSAMER_CUDA_LAUNCHED(kernel_name) \
  ::gossamer::kernels::cuda::cuda_check(cudaGetLastError(), kernel_name, __FILE__, __LINE__)
