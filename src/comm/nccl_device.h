// Device memory helpers for users of the nccl backend that hold no CUDA headers themselves (the
// communication benchmark, the tests): GPU count, allocation, copies, fill. Compiled only with
// CUDA (GOSSAMER_HAVE_NCCL). Invariant: every function first checks that a GPU is visible
// (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) and throws gossamer::Error otherwise.
#pragma once

#include <cstddef>

namespace gossamer::comm {

// Visible GPUs; 0 when the CUDA runtime reports an error (no driver, no device).
int cuda_device_count();
void* device_alloc(size_t bytes);
void device_free(void* p);
void copy_to_device(void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const void* src, size_t bytes);
void device_fill(void* p, int byte, size_t bytes);

}  // namespace gossamer::comm
