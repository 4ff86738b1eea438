// Implementation of memory.cuh.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/memory.cuh"

namespace gossamer::kernels::cuda {

namespace {

void* alloc(size_t bytes) {
  void* p = nullptr;
  if (bytes == 0) return nullptr;
  GOSSAMER_CUDA_CHECK(cudaMalloc(&p, bytes));
  GOSSAMER_CUDA_CHECK(cudaMemset(p, 0, bytes));
  return p;
}
void release(void* p, size_t) {
  if (p) GOSSAMER_CUDA_CHECK(cudaFree(p));
}
void zero(void* p, size_t bytes) {
  if (bytes) GOSSAMER_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream()));
}
void upload(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream()));
  GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream()));
}
void download(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
  GOSSAMER_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

}  // namespace

extern const MemoryOps kMemory{.backend = "cuda",
                               .host_accessible = false,
                               .alloc = alloc,
                               .free = release,
                               .zero = zero,
                               .upload = upload,
                               .download = download};

}  // namespace gossamer::kernels::cuda
