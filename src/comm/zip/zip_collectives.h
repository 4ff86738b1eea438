// The zip decorator's collective algorithms, run synchronously on its worker thread over the
// wrapped communicator's asynchronous operations, each plain (uncompressed) or compressed:
// both as pairwise exchange: in round j = 1..P-1 rank r sends to r+j and receives from r-j, so
// each rank has one flow out and one in (several flows through one link lose to each other: an
// all-to-all of every peer at once reached 80% of an emulated 1 Gbit/s link at 4 ranks, one flow
// per rank 95%). Rounds are split into segments; a step is one segment of one round, one
// all-to-all-v (plain) or sendrecv_upto (compressed) of the inner backend, and steps are
// round-major (one peer for a whole round).
//   reduce_scatter = rank r sends part r+j in round j and adds what r-j sent to its fp32
//                    accumulator of part r (own values first, then rounds 1..P-1 in order);
//   all_gather     = rank r sends its own part in every round (plain: received straight into
//                    place);
//   all_reduce     = that reduce-scatter over near-equal parts, then that all-gather.
// Compressed, each message is a zip message (codec.h) received into a buffer of the largest
// size it can have (its length arrives with it, Communicator::sendrecv_upto, so no exchange of
// sizes precedes the data); all_gather encodes its own part once; each operation
// ends with a sum of the raw and compressed totals, so every rank knows the same ratio. Steps
// pipeline: while step s is awaited, the next ones (kPlainAhead / kCompressedAhead) are encoded
// and on the wire, and step s is decoded while they travel.
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
  int64_t sent = 0, received = 0;  // bytes on the wire for this rank (totals all-reduce included)
  // Over every rank (from the exchanged sizes, so identical on all ranks): raw bytes that were
  // compressed and the compressed bytes they became.
  uint64_t all_raw = 0, all_packed = 0;
};

class ZipCollectives {
 public:
  // segment_bytes / plain_segment_bytes: raw bytes of one compressed / uncompressed step.
  ZipCollectives(Communicator& inner, size_t segment_bytes, size_t plain_segment_bytes,
                 const CodecOptions& codec);

  Traffic reduce_scatter(const void* in, void* out, std::span<const size_t> counts, DType dtype,
                         bool compressed);
  Traffic all_gather(const void* in, void* out, std::span<const size_t> counts, DType dtype,
                     bool compressed);
  Traffic all_reduce(void* buf, size_t n, DType dtype, bool compressed);

 private:
  struct Slot {                           // one step in the pipeline
    const void* send_ptr = nullptr;       // what this step sends (the input itself when plain)
    size_t send_bytes = 0, received = 0;  // bytes sent; bytes received (when finished)
    std::vector<uint8_t> send, recv;      // compressed bytes; received bytes
    std::vector<size_t> send_counts, recv_counts;  // plain: bytes per rank (one peer each)
  };
  // Step s of an operation: round 1..P-1 sends segment seg to rank + round and receives it
  // from rank - round (pairwise exchange, one flow out and one in per rank at a time).
  struct Step {
    size_t round = 0, seg = 0;
    int to = 0, from = 0;
  };
  // Element size, segment length, world, segments of the longest part, each rank's offset.
  struct Layout {
    size_t es = 0, seg = 0, P = 0, segments = 0;
    std::vector<size_t> offset;
  };
  template <class Encode, class Issue, class Finish>
  void pipeline(size_t steps, size_t ahead, Encode encode, Issue issue, Finish finish);
  size_t segment_elems(DType dtype, bool compressed) const;
  Layout layout(std::span<const size_t> counts, DType dtype, bool compressed) const;
  Step step(size_t s, const Layout& L) const;  // steps are round-major
  Work exchange(Slot& slot, const Step& st, const void* send, size_t bytes, void* recv,
                size_t recv_bytes);
  Work exchange_compressed(Slot& slot, const Step& st, size_t capacity);
  void agree_totals(Traffic& t, uint64_t raw, uint64_t packed);

  Communicator& inner_;
  size_t segment_bytes_, plain_segment_bytes_;
  CodecOptions codec_;
  int rank_, world_;
  // Measured under an emulated 1 Gbit/s link at 2-4 ranks (docs/PERF.md): plain steps of
  // 512 KiB, 15 on the wire, keep one TCP flow busy across step boundaries; compressed steps
  // of 1 MiB, 10 ahead (5 ahead: 64 MB at 2 ranks 10-20% slower; 512 KiB 15 ahead: alike).
  // kSlots: steps in the pipeline at once.
  static constexpr size_t kSlots = 16;
  static constexpr size_t kPlainAhead = 15, kCompressedAhead = 10;
  static_assert(kPlainAhead < kSlots && kCompressedAhead < kSlots,
                "a step's slot is busy until finished");
  Slot slots_[kSlots];
  std::vector<float> acc_;         // reduce_scatter: this rank's part, fp32, across rounds
  std::vector<uint8_t> packed_;    // all_gather: this rank's compressed segments
  std::vector<size_t> packed_at_;  // all_gather: their sizes
  int64_t totals_[2] = {0, 0};     // agree_totals: raw, packed
  std::vector<uint8_t> reduced_;   // all_reduce: this rank's reduced part
};

}  // namespace gossamer::comm::zip
