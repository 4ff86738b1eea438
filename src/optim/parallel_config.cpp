// ParallelConfig::validate (see parallel_config.h).
#include "optim/parallel_config.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::optim {

void ParallelConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(zero_stage >= 0 && zero_stage <= 2, "%szero_stage: must be 0, 1 or 2, found %d",
                 p.c_str(), zero_stage);
  GOSSAMER_CHECK(bucket_mb > 0, "%sbucket_mb: must be > 0, found %g", p.c_str(), bucket_mb);
  GOSSAMER_CHECK(check_replicas_every >= 0, "%scheck_replicas_every: must be >= 0, found %lld",
                 p.c_str(), (long long)check_replicas_every);
  GOSSAMER_CHECK(timeout_s >= 0, "%stimeout_s: must be >= 0, found %g", p.c_str(), timeout_s);
  GOSSAMER_CHECK(compression_min_bytes >= 0, "%scompression_min_bytes: must be >= 0, found %lld",
                 p.c_str(), (long long)compression_min_bytes);
  GOSSAMER_CHECK(link_gbps >= 0, "%slink_gbps: must be >= 0 (0: measure), found %g", p.c_str(),
                 link_gbps);
  GOSSAMER_CHECK(codec_gbps >= 0, "%scodec_gbps: must be >= 0 (0: measure), found %g", p.c_str(),
                 codec_gbps);
}

comm::zip::ZipOptions ParallelConfig::zip_options() const {
  comm::zip::ZipOptions o;
  o.mode = compression;
  o.min_bytes = size_t(compression_min_bytes);
  o.link_gbps = link_gbps;
  o.codec_gbps = codec_gbps;
  return o;
}

size_t ParallelConfig::bucket_elements() const {
  return std::max<size_t>(1, size_t(bucket_mb * 1e6 / sizeof(float)));
}

}  // namespace gossamer::optim
