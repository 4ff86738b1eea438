// The zip decorator's collective algorithms, run synchronously on its worker thread over the
// wrapped communicator's asynchronous operations, each plain (uncompressed) or compressed:
//   reduce_scatter = one all-to-all-v per segment (part r to rank r), then a local fp32 sum of
//                    the received parts in rank order (own part in its place);
//   all_gather     = one all-to-all-v per segment (own part to every rank);
//   all_reduce     = that reduce-scatter over near-equal parts, then that all-gather.
// Compressed, a segment's parts are zip messages (codec.h) whose sizes travel first in a small
// all-gather, so every rank also knows every message's size. Segments pipeline: segment k+1 is
// encoded while segment k is on the wire, and segment k decoded while k+1 is.
// Invariants: the plain and the compressed path of an operation produce the same bits (the codec
// is lossless and both sum the same fp32 values in the same order); every rank runs the same
// sequence of wrapped operations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "comm/zip/codec.h"

namespace gossamer::comm::zip {

// What one collective moved, for the accounting and the ratio estimate.
struct Traffic {
  int64_t sent = 0, received = 0;  // bytes on the wire for this rank (sizes exchange included)
  // Over every rank (from the exchanged sizes, so identical on all ranks): raw bytes that were
  // compressed and the compressed bytes they became.
  uint64_t all_raw = 0, all_packed = 0;
};

class ZipCollectives {
 public:
  // segment_bytes: raw bytes of one part per pipeline segment.
  ZipCollectives(Communicator& inner, size_t segment_bytes, const CodecOptions& codec);

  Traffic reduce_scatter(const void* in, void* out, std::span<const size_t> counts, DType dtype,
                         bool compressed);
  Traffic all_gather(const void* in, void* out, std::span<const size_t> counts, DType dtype,
                     bool compressed);
  Traffic all_reduce(void* buf, size_t n, DType dtype, bool compressed);

 private:
  struct Slot {
    std::vector<uint8_t> send, recv;
    std::vector<size_t> send_counts, recv_counts;  // bytes per rank
    std::vector<uint64_t> my_sizes, all_sizes;     // compressed sizes: mine, all ranks'
    std::vector<size_t> src_offset;                // where each source's bytes start in recv
  };
  template <class Encode, class Issue, class Finish>
  void pipeline(size_t segments, Encode encode, Issue issue, Finish finish);
  size_t segment_elems(DType dtype) const;
  // Element size, segment length, world, segment count and each rank's offset for counts.
  struct Layout {
    size_t es = 0, seg = 0, P = 0, segments = 0;
    std::vector<size_t> offset;
  };
  Layout layout(std::span<const size_t> counts, DType dtype) const;

  Communicator& inner_;
  size_t segment_bytes_;
  CodecOptions codec_;
  int rank_, world_;
  Slot slots_[2];
  std::vector<float> acc_;
  std::vector<uint8_t> reduced_;  // all_reduce: this rank's reduced part
};

}  // namespace gossamer::comm::zip
