// The cost model and decision of compression_policy.h.
#include "comm/zip/compression_policy.h"

namespace gossamer::comm::zip {

const char* path_name(Path path) {
  switch (path) {
    case Path::NATIVE:
      return "native";
    case Path::PLAIN:
      return "plain";
    case Path::COMPRESSED:
      return "compressed";
  }
  return "unknown";
}

Decision decide(const PolicyInputs& in) {
  const double m = double(in.bytes), p = double(in.world);
  const double spread = (p - 1) / p * m;  // one all-to-all or all-gather's share of M
  double wire = 0, codec = 0;
  switch (in.kind) {
    case Kind::REDUCE_SCATTER:
      wire = spread;
      codec = 2 * spread;
      break;
    case Kind::ALL_GATHER:
      wire = spread;
      codec = m / p + spread;
      break;
    default:  // ALL_REDUCE
      wire = 2 * spread;
      codec = 3 * spread + m / p;
      break;
  }
  const bool small = in.bytes < in.min_bytes || in.world < 2;
  switch (in.mode) {
    case Compression::COMPRESSION_OFF:
      return {Path::NATIVE, 0, 0};
    case Compression::COMPRESSION_PLAIN:
      return {Path::PLAIN, 0, 0};
    case Compression::COMPRESSION_ON:
      return {small ? Path::PLAIN : Path::COMPRESSED, 0, 0};
    case Compression::COMPRESSION_ADAPTIVE:
      break;
  }
  if (small || in.link_gbps <= 0 || in.codec_gbps <= 0 || in.ratio <= 0)
    return {Path::NATIVE, 0, 0};
  Decision d;
  d.native_s = wire / (in.link_gbps * 1e9);
  d.compressed_s = wire / (in.ratio * in.link_gbps * 1e9) + codec / (in.codec_gbps * 1e9);
  d.path = d.compressed_s < (1 - kAdaptiveMargin) * d.native_s ? Path::COMPRESSED : Path::NATIVE;
  return d;
}

}  // namespace gossamer::comm::zip
