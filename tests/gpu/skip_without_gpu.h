// SKIP_WITHOUT_GPU(): the first line of every gpu test that runs a kernel. Without a visible GPU
// the test is reported SKIPPED (and ctest's label gpu lists its binary as skipped), never passed.
#pragma once

#include <gtest/gtest.h>

#include "kernels/cuda/cuda_context.cuh"

#define SKIP_WITHOUT_GPU()                            \
  if (::gossamer::kernels::cuda::visible_gpus() == 0) \
  GTEST_SKIP() << "no GPU visible (cudaGetDeviceCount)"
