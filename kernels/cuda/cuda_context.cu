// Implementation of cuda_context.cuh.
#include <cuda_runtime.h>

#include <cstdio>

#include "core/error.h"
#include "kernels/cuda/cuda_context.cuh"

namespace gossamer::kernels::cuda {

namespace {
cudaStream_t g_stream = nullptr;
void* g_workspace = nullptr;
size_t g_workspace_bytes = 0;
}  // namespace

void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  char msg[512];
  std::snprintf(msg, sizeof msg, "%s at %s:%d: %s", what, file, line, cudaGetErrorString(e));
  throw Error(msg);  // header-only: this library needs nothing of gossamer_lib
}

int visible_gpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

void use_device(int device) {
  GOSSAMER_CUDA_CHECK(cudaSetDevice(device));
}

cudaStream_t stream() {
  return g_stream;
}
void set_stream(cudaStream_t s) {
  g_stream = s;
}

void* workspace(size_t bytes) {
  if (bytes <= g_workspace_bytes) return g_workspace;
  if (g_workspace) {
    GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(g_stream));  // earlier ops may still read it
    GOSSAMER_CUDA_CHECK(cudaFree(g_workspace));
    g_workspace = nullptr, g_workspace_bytes = 0;
  }
  GOSSAMER_CUDA_CHECK(cudaMalloc(&g_workspace, bytes));
  g_workspace_bytes = bytes;
  return g_workspace;
}

}  // namespace gossamer::kernels::cuda
