// CommConfig::validate and zip_options (see comm_config.h).
#include "comm/comm_config.h"

#include "core/error.h"

namespace gossamer::comm {

void CommConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(ranks >= 0, "%sranks: must be >= 0 (0: the launcher's ranks), found %d", p.c_str(),
                 ranks);
  GOSSAMER_CHECK(timeout_s >= 0, "%stimeout_s: must be >= 0, found %g", p.c_str(), timeout_s);
  GOSSAMER_CHECK(compression_min_bytes >= 0, "%scompression_min_bytes: must be >= 0, found %lld",
                 p.c_str(), (long long)compression_min_bytes);
  GOSSAMER_CHECK(link_gbps >= 0, "%slink_gbps: must be >= 0 (0: measure), found %g", p.c_str(),
                 link_gbps);
  sim.validate(p + "sim.");
  GOSSAMER_CHECK(codec_gbps >= 0, "%scodec_gbps: must be >= 0 (0: measure), found %g", p.c_str(),
                 codec_gbps);
}

zip::ZipOptions CommConfig::zip_options() const {
  zip::ZipOptions o;
  o.mode = compression;
  o.fixed_order = sum_order == SumOrder::SUM_ORDER_FIXED;
  o.min_bytes = size_t(compression_min_bytes);
  o.link_gbps = link_gbps;
  o.codec_gbps = codec_gbps;
  return o;
}

}  // namespace gossamer::comm
