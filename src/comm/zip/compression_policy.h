// The compression policy of the zip decorator: for each eligible collective (sum all-reduce,
// sum reduce-scatter, all-gather of bf16 or fp32), whether it runs on the wrapped backend's own
// collective ("native"), the decorator's uncompressed algorithm ("plain") or compressed, from the
// configured mode, the message size and a bandwidth cost model (docs/COMM.md), for a message of
// M bytes on P ranks:
//   native:     T = wire / B, wire = bytes this rank sends: RS and AG (P-1)/P*M, AR twice that
//   compressed: per phase (RS, AG; AR = RS then AG)
//               T = max(wire / (ratio * B), codec / C) + 2 * min(S, M/P) / C
//               codec = raw bytes this rank encodes + decodes: RS 2(P-1)/P*M, AG M/P + (P-1)/P*M;
//               the wire and the codec overlap (pipelined steps) but for the first step's
//               encoding and the last one's decoding, S = the compressed step's raw bytes
// with B the link's bandwidth, C the codec's throughput and ratio the last measured ratio for the
// kind and dtype. Adaptive compresses when T_compressed < (1 - kAdaptiveMargin) * T_native.
// Invariant: decide() is a pure function of its arguments, and the decorator feeds it only values
// every rank holds identically (sizes, the configuration, measurements agreed by a collective),
// so every rank takes the same path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "comm/communicator.h"
#include "core/enum_names.h"

namespace gossamer::comm::zip {

// parallel.compression.
enum class Compression { COMPRESSION_OFF, COMPRESSION_PLAIN, COMPRESSION_ON, COMPRESSION_ADAPTIVE };

enum class Path : uint8_t { NATIVE, PLAIN, COMPRESSED };
const char* path_name(Path path);

inline constexpr double kAdaptiveMargin = 0.05;

struct PolicyInputs {
  Compression mode = Compression::COMPRESSION_ADAPTIVE;
  bool fixed_order = false;      // adaptive: fall back to PLAIN, not NATIVE
  Kind kind = Kind::ALL_REDUCE;  // ALL_REDUCE, REDUCE_SCATTER or ALL_GATHER
  size_t bytes = 0;              // the whole message (sum over ranks' parts)
  int world = 1;
  size_t min_bytes = 0;                    // below: never compressed
  double link_gbps = 0;                    // B in GB/s (1e9 bytes/s)
  double codec_gbps = 0;                   // C in GB/s of raw bytes (encode and decode alike)
  double ratio = 1;                        // expected compression ratio
  size_t segment_bytes = size_t{1} << 20;  // S: raw bytes of one compressed pipeline step
};

struct Decision {
  Path path = Path::NATIVE;
  double native_s = 0, compressed_s = 0;  // the model's predictions (0 when not evaluated)
};

Decision decide(const PolicyInputs& in);

// Whether adaptive could ever compress a call between `world` ranks with these speeds: decide()'s
// best case (an unbounded message, so the fill vanishes, and an unbounded ratio, so the wire time
// does) for the kind with the least codec work per wire byte, the all-gather (P/(P-1)):
// C > B P/(P-1) / (1 - kAdaptiveMargin). False for unknown speeds and a single rank.
bool compression_can_ever_pay(double link_gbps, double codec_gbps, int world);

}  // namespace gossamer::comm::zip

namespace gossamer {
template <>
struct EnumNames<comm::zip::Compression> {
  static constexpr std::pair<comm::zip::Compression, std::string_view> values[] = {
      {comm::zip::Compression::COMPRESSION_OFF, "off"},
      {comm::zip::Compression::COMPRESSION_PLAIN, "plain"},
      {comm::zip::Compression::COMPRESSION_ON, "on"},
      {comm::zip::Compression::COMPRESSION_ADAPTIVE, "adaptive"}};
};
}  // namespace gossamer
