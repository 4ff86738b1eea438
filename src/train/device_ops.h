// The op table a run computes with, from its `kernels` section: kernels.device = cpu, the CPU
// table after this process's threads and gemm backend were set; cuda, the CUDA table (every
// kernel of kernels/cuda/, buffers in GPU memory). Errors name the key: a build without CUDA,
// no GPU visible. The choice is logged.
#pragma once

#include "kernels/cpu/cpu_setup.h"
#include "kernels/ops.h"

namespace gossamer::train {

// `key` names the setting in errors and the log (a command-line flag where one chose the device).
const kernels::OpTable& ops_for_run(const kernels::cpu::KernelsConfig& kernels, int world,
                                    const char* key = "kernels.device");

}  // namespace gossamer::train
