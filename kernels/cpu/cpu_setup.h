// CPU kernel set-up for one process: how many OpenMP threads a rank uses (its share of the
// node's cores unless set) and which gemm backend serves the matrix products. KernelsConfig is
// the `kernels` section of a run config. Invariant: called once per process, before any op
// runs; the choice is logged.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "core/enum_names.h"
#include "kernels/cpu/gemm.h"

namespace gossamer::kernels::cpu {

struct KernelsConfig {
  GemmBackend gemm = GemmBackend::GEMM_BACKEND_AUTO;
  int threads = 0;

  template <class V>
  void visit(V& v) {
    v("gemm", gemm, "CPU matrix-product backend (auto: a fixed per-shape rule, docs/PERF.md)");
    v("threads", threads, "CPU threads per rank (0: cores / ranks on the node)");
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
struct EnumNames<kernels::cpu::GemmBackend> {
  static constexpr std::pair<kernels::cpu::GemmBackend, std::string_view> values[] = {
      {kernels::cpu::GemmBackend::GEMM_BACKEND_AUTO, "auto"},
      {kernels::cpu::GemmBackend::GEMM_BACKEND_ONEDNN, "onednn"},
      {kernels::cpu::GemmBackend::GEMM_BACKEND_OPENBLAS, "openblas"}};
};
}  // namespace gossamer
