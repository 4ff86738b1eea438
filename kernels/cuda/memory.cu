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
  // On the ops' stream, so that no kernel on it can see the memory before it is zero.
  const cudaError_t e = cudaMemsetAsync(p, 0, bytes, stream());
  if (e != cudaSuccess) {
    (void)cudaFree(p);
    cuda_check(e, "cudaMemsetAsync (zero-filling a new buffer)", __FILE__, __LINE__);
  }
  return p;
}
// Never throws: called from destructors. After a kernel fault or at process exit cudaFree
// returns the sticky error (or cudaErrorCudartUnloading), which the failing call already
// reported; the memory goes with the context.
void release(void* p, size_t) {
  if (p) (void)cudaFree(p);
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

void copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  GOSSAMER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()));
}

}  // namespace

extern const MemoryOps kMemory{.backend = "cuda",
                               .host_accessible = false,
                               .alloc = alloc,
                               .free = release,
                               .zero = zero,
                               .upload = upload,
                               .download = download,
                               .copy = copy};

}  // namespace gossamer::kernels::cuda
