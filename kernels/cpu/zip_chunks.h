// The CPU reference of the zip codec's per-chunk work (kernels/zip_chunks.h): portable_chunk.h's
// functions over OpenMP, one chunk per iteration, on host memory (kernels/cpu/memory.h). What
// the CUDA kernels are checked against, and how DeviceZipCodec is tested without a GPU.
#pragma once

#include "kernels/zip_chunks.h"

namespace gossamer::kernels::cpu {

extern const ZipChunkKernels kZipChunks;

}  // namespace gossamer::kernels::cpu
