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
  // More threads than kMaxThreadsPerCore per core only slows a rank down, and far more makes
  // OpenMP itself fail (100,000 crashed libgomp): a typo, refused before any thread starts.
  // Checked here, on the machine that runs, not where a config is validated (a sweep's login
  // node may have fewer cores than its compute nodes).
  const int cores = omp_get_num_procs(), most = kMaxThreadsPerCore * cores;
  GOSSAMER_CHECK(kernels.threads <= most,
                 "kernels.threads: %d is more than %d per core of the %d core(s) here (%d); use "
                 "0 (the cores shared out among the node's ranks) or at most %d",
                 kernels.threads, kMaxThreadsPerCore, cores, most, most);
  int threads = kernels.threads;
  if (threads == 0) threads = std::max(1, omp_get_num_procs() / std::max(1, ranks_on_node));
  omp_set_num_threads(threads);
  gemm_set_backend(kernels.gemm);
  log_info("cpu: %d OpenMP threads; gemm backend %s; %s", threads, gemm_backend_name(kernels.gemm),
           gemm_describe().c_str());
}

}  // namespace gossamer::kernels::cpu
