// configure_cpu_kernels() and KernelsConfig::validate() (see cpu_setup.h).
#include "kernels/cpu/cpu_setup.h"

#include <omp.h>

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "kernels/cpu/gemm.h"

namespace gossamer::kernels::cpu {

void KernelsConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(gemm == "auto" || gemm == "onednn" || gemm == "openblas",
                 "%sgemm: expected \"auto\", \"onednn\" or \"openblas\", found \"%s\"", p.c_str(),
                 gemm.c_str());
  GOSSAMER_CHECK(threads >= 0, "%sthreads: must be >= 0, found %d", p.c_str(), threads);
}

void configure_cpu_kernels(const KernelsConfig& kernels, int ranks_on_node) {
  int threads = kernels.threads;
  if (threads == 0) threads = std::max(1, omp_get_num_procs() / std::max(1, ranks_on_node));
  omp_set_num_threads(threads);
  gemm_set_backend(gemm_backend_from_string(kernels.gemm));
  log_info("cpu: %d OpenMP threads; gemm backend %s; %s", threads, kernels.gemm.c_str(),
           gemm_describe().c_str());
}

}  // namespace gossamer::kernels::cpu
