// configure_cpu_kernels() and KernelsConfig::validate() (see cpu_setup.h).
#include "kernels/cpu/cpu_setup.h"

#include <omp.h>

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "kernels/cpu/gemm.h"

namespace gossamer::kernels::cpu {

void KernelsConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(threads >= 0, "%sthreads: must be >= 0, found %d", p.c_str(), threads);
}

void configure_cpu_kernels(const KernelsConfig& kernels, int ranks_on_node) {
  int threads = kernels.threads;
  if (threads == 0) threads = std::max(1, omp_get_num_procs() / std::max(1, ranks_on_node));
  omp_set_num_threads(threads);
  gemm_set_backend(kernels.gemm);
  log_info("cpu: %d OpenMP threads; gemm backend %s; %s", threads, gemm_backend_name(kernels.gemm),
           gemm_describe().c_str());
}

}  // namespace gossamer::kernels::cpu
