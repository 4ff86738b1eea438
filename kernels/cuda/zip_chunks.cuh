// The CUDA zip codec's per-chunk kernels (kernels/zip_chunks.h) on GPU memory (memory.cuh):
// encode and decode run one chunk per thread through portable_chunk.h, the functions the CPU
// reference (kernels/cpu/zip_chunks.cpp) runs, so both write the same bytes and values; gather
// copies a chunk per block. Launched on cuda_context's stream, not synchronised. Correct before
// fast: a 16 MB bf16 message in chunks of 16,384 elements is 512 threads.
#pragma once

#include "kernels/zip_chunks.h"

namespace gossamer::kernels::cuda {

extern const ZipChunkKernels kZipChunks;

}  // namespace gossamer::kernels::cuda
