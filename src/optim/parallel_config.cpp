// ParallelConfig::validate (see parallel_config.h).
#include "optim/parallel_config.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::optim {

void ParallelConfig::validate(const std::string& p) const {
  comm::CommConfig::validate(p);
  GOSSAMER_CHECK(zero_stage >= 0 && zero_stage <= 2, "%szero_stage: must be 0, 1 or 2, found %d",
                 p.c_str(), zero_stage);
  GOSSAMER_CHECK(bucket_mb > 0, "%sbucket_mb: must be > 0, found %g", p.c_str(), bucket_mb);
  GOSSAMER_CHECK(check_replicas_every >= 0, "%scheck_replicas_every: must be >= 0, found %lld",
                 p.c_str(), (long long)check_replicas_every);
}

size_t ParallelConfig::bucket_elements() const {
  return std::max<size_t>(1, size_t(bucket_mb * 1e6 / sizeof(float)));
}

}  // namespace gossamer::optim
