// The cost model and decision of compression_policy.h.
#include "comm/zip/compression_policy.h"

#include <algorithm>

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

namespace {

// One pipelined compressed exchange: the wire and the codec overlap, except the first step's
// encoding and the last step's decoding (at most one segment each, or the whole part).
double pipelined_s(double wire, double codec, double part, const PolicyInputs& in) {
  const double fill = 2 * std::min(double(in.segment_bytes), part);
  return std::max(wire / (in.ratio * in.link_gbps * 1e9), codec / (in.codec_gbps * 1e9)) +
         fill / (in.codec_gbps * 1e9);
}

}  // namespace

Decision decide(const PolicyInputs& in) {
  const double m = double(in.bytes), p = double(in.world);
  const double spread = (p - 1) / p * m;  // one reduce-scatter's or all-gather's share of M
  const double part = m / p;
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
  const Path fallback = in.fixed_order ? Path::PLAIN : Path::NATIVE;
  if (small || in.link_gbps <= 0 || in.codec_gbps <= 0 || in.ratio <= 0) return {fallback, 0, 0};
  // Reduce-scatter: send (P-1)/P M, encode it and decode as much. All-gather: send (P-1)/P M,
  // encode the own part, decode the others. All-reduce: one, then the other.
  const double rs = pipelined_s(spread, 2 * spread, part, in);
  const double ag = pipelined_s(spread, part + spread, part, in);
  Decision d;
  switch (in.kind) {
    case Kind::REDUCE_SCATTER:
      d.native_s = spread / (in.link_gbps * 1e9);
      d.compressed_s = rs;
      break;
    case Kind::ALL_GATHER:
      d.native_s = spread / (in.link_gbps * 1e9);
      d.compressed_s = ag;
      break;
    default:  // ALL_REDUCE
      d.native_s = 2 * spread / (in.link_gbps * 1e9);
      d.compressed_s = rs + ag;
      break;
  }
  d.path = d.compressed_s < (1 - kAdaptiveMargin) * d.native_s ? Path::COMPRESSED : fallback;
  return d;
}

bool compression_can_ever_pay(double link_gbps, double codec_gbps, int world) {
  if (world < 2 || link_gbps <= 0 || codec_gbps <= 0) return false;
  const double p = double(world);
  return codec_gbps * (1 - kAdaptiveMargin) > link_gbps * p / (p - 1);
}

}  // namespace gossamer::comm::zip
