// CPU kernel set-up for one process: how many OpenMP threads a rank uses (its share of the
// node's cores unless set) and which gemm backend serves the matrix products. KernelsConfig is
// the `kernels` section of a run config, which also names the device the ops run on (the
// table is chosen in run/device_ops.h). Invariant: called once per process, before any op
// runs; the choice is logged.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "core/enum_names.h"
#include "kernels/cpu/gemm.h"
#include "kernels/matmul_dtype.h"

namespace gossamer::kernels::cpu {

// kernels.threads may be at most this many per core of the machine that runs
// (configure_cpu_kernels()).
constexpr int kMaxThreadsPerCore = 4;

// Where a run's ops and buffers live.
enum class KernelsDevice { KERNELS_DEVICE_CPU, KERNELS_DEVICE_CUDA };

struct KernelsConfig {
  KernelsDevice device = KernelsDevice::KERNELS_DEVICE_CPU;
  GemmBackend gemm = GemmBackend::GEMM_BACKEND_AUTO;
  int threads = 0;
  MatmulDtype matmul_dtype = MatmulDtype::MATMUL_DTYPE_FP32;

  // Resume metadata (run/resume_check.h): the value a checkpoint written before a key existed
  // ran with (added_later), and the keys whose change leaves the run the same run (harmless).
  template <class R>
  static void resume_keys(R& r) {
    r.harmless_section();  // how the run computes, not what it trains
  }

  template <class V>
  void visit(V& v) {
    v("device", device,
      "where the ops and the model's buffers live (cuda: one GPU per rank, the node-local rank's; "
      "every optimizer; NCCL between ranks; "
      "docs/CUDA.md)");
    v("gemm", gemm, "CPU matrix-product backend (auto: a fixed per-shape rule, docs/PERF.md)");
    v("threads", threads,
      "CPU threads per rank (0: cores / ranks on the node; at most 4 per core)");
    v("matmul_dtype", matmul_dtype,
      "operands of the model's matrix products: fp32, or bf16 (weights and activations rounded "
      "at each product, fp32 accumulation; master weights, gradients and optimizer state stay "
      "fp32; on the CPU oneDNN's bf16 kernels where it has bf16 instructions, else an emulation: "
      "docs/CUDA.md)");
  }
  // Throws gossamer::Error naming the key (prefixed by `path`) when invalid.
  void validate(const std::string& path = "kernels.") const;
};

// Applies kernels.threads (0: cores / ranks_on_node) and kernels.gemm to this process and logs
// the choice.
void configure_cpu_kernels(const KernelsConfig& kernels, int ranks_on_node = 1);

}  // namespace gossamer::kernels::cpu

namespace gossamer {
template <>
struct EnumNames<kernels::cpu::KernelsDevice> {
  static constexpr std::pair<kernels::cpu::KernelsDevice, std::string_view> values[] = {
      {kernels::cpu::KernelsDevice::KERNELS_DEVICE_CPU, "cpu"},
      {kernels::cpu::KernelsDevice::KERNELS_DEVICE_CUDA, "cuda"}};
};
template <>
struct EnumNames<kernels::cpu::GemmBackend> {
  static constexpr std::pair<kernels::cpu::GemmBackend, std::string_view> values[] = {
      {kernels::cpu::GemmBackend::GEMM_BACKEND_AUTO, "auto"},
      {kernels::cpu::GemmBackend::GEMM_BACKEND_ONEDNN, "onednn"},
      {kernels::cpu::GemmBackend::GEMM_BACKEND_OPENBLAS, "openblas"}};
};
}  // namespace gossamer
