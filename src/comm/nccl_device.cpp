// Implementation of nccl_device.h over the CUDA runtime API. Copies are synchronous.
#include "comm/nccl_device.h"

#include <cuda_runtime.h>

#include "core/error.h"
#include "kernels/cuda/cuda_context.cuh"

namespace gossamer::comm {

namespace {

void require_gpu(const char* what) {
  GOSSAMER_CHECK(cuda_device_count() > 0, "comm %s: no GPU is visible (cudaGetDeviceCount)", what);
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail("comm %s: %s", what, cudaGetErrorString(e));
}

}  // namespace

int cuda_device_count() {
  return kernels::cuda::visible_gpus();
}

void* device_alloc(size_t bytes) {
  require_gpu("device_alloc");
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  return p;
}

void device_free(void* p) {
  if (p && cuda_device_count() > 0) cudaFree(p);
}

void copy_to_device(void* dst, const void* src, size_t bytes) {
  require_gpu("copy_to_device");
  if (bytes) cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

void copy_to_host(void* dst, const void* src, size_t bytes) {
  require_gpu("copy_to_host");
  if (bytes) cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}

void device_fill(void* p, int byte, size_t bytes) {
  require_gpu("device_fill");
  if (bytes) {
    cuda_check(cudaMemset(p, byte, bytes), "cudaMemset");
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
}

}  // namespace gossamer::comm
