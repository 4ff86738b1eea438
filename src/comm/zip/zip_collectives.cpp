// The decorator's collective algorithms (zip_collectives.h).
#include "comm/zip/zip_collectives.h"

#include <algorithm>
#include <cstring>

#include "comm/byte_accounting.h"
#include "comm/op_args.h"
#include "core/bf16.h"
#include "core/error.h"

namespace gossamer::comm::zip {

namespace {

// acc[i] = v[i] (assign) or acc[i] += v[i], v holding n bf16 or fp32 values at any alignment.
// The same arithmetic as decompress_accumulate, so both paths sum to the same bits.
void accumulate(const uint8_t* v, float* acc, size_t n, DType dtype, bool assign) {
  if (dtype == DType::F32) {
    for (size_t i = 0; i < n; ++i) {
      float x;
      std::memcpy(&x, v + i * 4, 4);
      acc[i] = assign ? x : acc[i] + x;
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, v + i * 2, 2);
    const float x = bf16_to_float(h);
    acc[i] = assign ? x : acc[i] + x;
  }
}

void store(const float* acc, uint8_t* out, size_t n, DType dtype) {
  if (dtype == DType::F32) {
    std::memcpy(out, acc, n * 4);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = float_to_bf16(acc[i]);
    std::memcpy(out + i * 2, &h, 2);
  }
}

size_t part_len(std::span<const size_t> counts, int r, size_t k, size_t seg) {
  const size_t c = counts[size_t(r)];
  return k * seg >= c ? 0 : std::min(seg, c - k * seg);
}

}  // namespace

ZipCollectives::ZipCollectives(Communicator& inner, size_t segment_bytes,
                               size_t plain_segment_bytes, const CodecOptions& codec)
    : inner_(inner),
      segment_bytes_(segment_bytes),
      plain_segment_bytes_(plain_segment_bytes),
      codec_(codec),
      rank_(inner.rank()),
      world_(inner.size()) {
  GOSSAMER_CHECK(segment_bytes_ >= 4 && plain_segment_bytes_ >= 4,
                 "zip: segments of %zu and %zu bytes, at least 4", segment_bytes_,
                 plain_segment_bytes_);
  for (Slot& s : slots_) {
    s.send_counts.assign(size_t(world_), 0);
    s.recv_counts.assign(size_t(world_), 0);
  }
}

size_t ZipCollectives::segment_elems(DType dtype, bool compressed) const {
  const size_t bytes = compressed ? segment_bytes_ : plain_segment_bytes_;
  return std::max<size_t>(1, bytes / dtype_size(dtype));
}

ZipCollectives::Layout ZipCollectives::layout(std::span<const size_t> counts, DType dtype,
                                              bool compressed) const {
  Layout L;
  L.es = dtype_size(dtype);
  L.seg = segment_elems(dtype, compressed);
  L.P = size_t(world_);
  const size_t longest = *std::max_element(counts.begin(), counts.end());
  L.segments = (longest + L.seg - 1) / L.seg;
  L.offset.resize(L.P);
  for (size_t r = 0; r < L.P; ++r) L.offset[r] = count_offset(counts, int(r));
  return L;
}

ZipCollectives::Step ZipCollectives::step(size_t s, const Layout& L) const {
  Step st;
  st.round = 1 + s / L.segments;
  st.seg = s % L.segments;
  st.to = int((size_t(rank_) + st.round) % L.P);
  st.from = int((size_t(rank_) + L.P - st.round) % L.P);
  return st;
}

// encode(s, slot) prepares step s's message; issue(s, slot) -> Work of its exchange;
// finish(s, slot) consumes step s. `ahead` steps are on the wire at once: when
// step s arrives, step s + ahead is started and then step s finished while the others travel.
// ahead < kSlots (step s's slot is busy until it is finished).
template <class Encode, class Issue, class Finish>
void ZipCollectives::pipeline(size_t steps, size_t ahead, Encode encode, Issue issue,
                              Finish finish) {
  Work data[kSlots];
  auto start = [&](size_t s) {
    Slot& slot = slots_[s % kSlots];
    encode(s, slot);
    data[s % kSlots] = issue(s, slot);
  };
  try {
    for (size_t s = 0; s < std::min(steps, ahead); ++s) start(s);
    for (size_t s = 0; s < steps; ++s) {
      data[s % kSlots].wait();
      if (s + ahead < steps) start(s + ahead);
      finish(s, slots_[s % kSlots]);
    }
  } catch (...) {
    // Steps still on the wire read and write the caller's buffers: let them end first.
    for (Work& w : data) try {
        w.wait();
      } catch (...) {
      }
    throw;
  }
}

// One step's exchange: `bytes` from `send` to st.to and `recv_bytes` from st.from into `recv`.
Work ZipCollectives::exchange(Slot& slot, const Step& st, const void* send, size_t bytes,
                              void* recv, size_t recv_bytes) {
  std::fill(slot.send_counts.begin(), slot.send_counts.end(), 0);
  std::fill(slot.recv_counts.begin(), slot.recv_counts.end(), 0);
  slot.send_counts[size_t(st.to)] = bytes;
  slot.recv_counts[size_t(st.from)] = recv_bytes;
  return inner_.all_to_all_v(send, slot.send_counts, recv, slot.recv_counts, DType::U8);
}

// Compressed: one zip message of `bytes` to st.to and one from st.from of at most `capacity`
// bytes (its length arrives with it: no exchange of sizes first).
Work ZipCollectives::exchange_compressed(Slot& slot, const Step& st, size_t capacity) {
  if (slot.recv.size() < capacity) slot.recv.resize(capacity);
  return inner_.sendrecv_upto(slot.send_ptr, slot.send_bytes, st.to, slot.recv.data(), capacity,
                              st.from, &slot.received, DType::U8);
}

// The totals of every rank's compressed parts, for a ratio every rank agrees on.
void ZipCollectives::agree_totals(Traffic& t, uint64_t raw, uint64_t packed) {
  totals_[0] = raw, totals_[1] = packed;
  inner_.all_reduce(totals_, 2, DType::I64, ReduceOp::SUM).wait();
  t.all_raw = totals_[0], t.all_packed = totals_[1];
  const ByteCount b = all_reduce_bytes(2, DType::I64, world_);
  t.sent += b.sent, t.received += b.received;
}

Traffic ZipCollectives::reduce_scatter(const void* in_v, void* out_v,
                                       std::span<const size_t> counts, DType dtype,
                                       bool compressed) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  auto* out = static_cast<uint8_t*>(out_v);
  const Layout L = layout(counts, dtype, compressed);
  const size_t es = L.es, seg = L.seg, P = L.P;
  const size_t mine = counts[size_t(rank_)];
  Traffic t;
  if (P == 1) {
    if (out != in && mine > 0) std::memmove(out, in, mine * es);
    return t;
  }
  if (acc_.size() < mine) acc_.resize(mine);
  uint64_t raw = 0, packed = 0;
  auto encode = [&](size_t s, Slot& slot) {
    const Step st = step(s, L);
    const size_t len = part_len(counts, st.to, st.seg, seg);
    slot.send_ptr = in + (L.offset[size_t(st.to)] + st.seg * seg) * es;
    slot.send_bytes = len * es;
    if (!compressed) return;
    const size_t cap = max_compressed_bytes(len, dtype, codec_.chunk_elems);
    if (slot.send.size() < cap) slot.send.resize(cap);
    const size_t bytes = len == 0 ? 0 : compress(slot.send_ptr, len, dtype, slot.send, codec_);
    raw += slot.send_bytes, packed += bytes;
    slot.send_ptr = slot.send.data();
    slot.send_bytes = bytes;
  };
  auto issue = [&](size_t s, Slot& slot) -> Work {
    const Step st = step(s, L);
    const size_t n = part_len(counts, rank_, st.seg, seg);
    t.sent += int64_t(slot.send_bytes);
    if (compressed)
      return exchange_compressed(slot, st, max_compressed_bytes(n, dtype, codec_.chunk_elems));
    if (slot.recv.size() < n * es) slot.recv.resize(n * es);
    slot.received = n * es;
    return exchange(slot, st, slot.send_ptr, slot.send_bytes, slot.recv.data(), n * es);
  };
  // Each element of this rank's part sums in one fixed order: its own value, then what ranks
  // rank-1, rank-2, ... sent (one per round), in fp32; stored after the last round.
  auto finish = [&](size_t s, Slot& slot) {
    const Step st = step(s, L);
    const size_t n = part_len(counts, rank_, st.seg, seg);
    t.received += int64_t(slot.received);
    if (n == 0) return;
    float* acc = acc_.data() + st.seg * seg;
    if (st.round == 1)
      accumulate(in + (L.offset[size_t(rank_)] + st.seg * seg) * es, acc, n, dtype, true);
    if (compressed)
      decompress_accumulate(std::span<const uint8_t>(slot.recv.data(), slot.received), acc, n,
                            dtype, false, codec_.threads);
    else
      accumulate(slot.recv.data(), acc, n, dtype, false);
    if (st.round == P - 1) store(acc, out + st.seg * seg * es, n, dtype);
  };
  pipeline((P - 1) * L.segments, compressed ? kCompressedAhead : kPlainAhead, encode, issue,
           finish);
  if (compressed) agree_totals(t, raw, packed);
  return t;
}

Traffic ZipCollectives::all_gather(const void* in_v, void* out_v, std::span<const size_t> counts,
                                   DType dtype, bool compressed) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  auto* out = static_cast<uint8_t*>(out_v);
  const Layout L = layout(counts, dtype, compressed);
  const size_t es = L.es, seg = L.seg, P = L.P;
  const size_t mine = counts[size_t(rank_)];
  uint8_t* own = out + L.offset[size_t(rank_)] * es;
  if (own != in && mine > 0) std::memcpy(own, in, mine * es);
  Traffic t;
  if (P == 1) return t;
  // Compressed, this rank's segments are encoded once (round 1) and sent from here every round.
  const size_t mine_segments = (mine + seg - 1) / seg;
  const size_t cap = max_compressed_bytes(seg, dtype, codec_.chunk_elems);
  if (compressed) {
    packed_at_.assign(mine_segments, 0);
    if (packed_.size() < cap * mine_segments) packed_.resize(cap * mine_segments);
  }
  uint64_t raw = 0, packed = 0;
  auto encode = [&](size_t s, Slot& slot) {
    const Step st = step(s, L);
    const size_t len = part_len(counts, rank_, st.seg, seg);
    slot.send_ptr = in + st.seg * seg * es;
    slot.send_bytes = len * es;
    if (!compressed) return;
    if (len > 0) {
      uint8_t* dst = packed_.data() + st.seg * cap;
      if (st.round == 1) {
        packed_at_[st.seg] =
            compress(slot.send_ptr, len, dtype, std::span<uint8_t>(dst, cap), codec_);
        raw += (P - 1) * slot.send_bytes, packed += (P - 1) * packed_at_[st.seg];
      }
      slot.send_ptr = dst;
      slot.send_bytes = packed_at_[st.seg];
    }
  };
  auto issue = [&](size_t s, Slot& slot) -> Work {
    const Step st = step(s, L);
    const size_t n = part_len(counts, st.from, st.seg, seg);
    uint8_t* dst = out + (L.offset[size_t(st.from)] + st.seg * seg) * es;
    t.sent += int64_t(slot.send_bytes);
    if (!compressed) {  // straight into place
      t.received += int64_t(n * es);
      return exchange(slot, st, slot.send_ptr, slot.send_bytes, dst, n * es);
    }
    return exchange_compressed(slot, st, max_compressed_bytes(n, dtype, codec_.chunk_elems));
  };
  auto finish = [&](size_t s, Slot& slot) {
    if (!compressed) return;
    const Step st = step(s, L);
    const size_t n = part_len(counts, st.from, st.seg, seg);
    t.received += int64_t(slot.received);
    if (n == 0) return;
    uint8_t* dst = out + (L.offset[size_t(st.from)] + st.seg * seg) * es;
    decompress(std::span<const uint8_t>(slot.recv.data(), slot.received), dst, n, dtype,
               codec_.threads);
  };
  pipeline((P - 1) * L.segments, compressed ? kCompressedAhead : kPlainAhead, encode, issue,
           finish);
  if (compressed) agree_totals(t, raw, packed);
  return t;
}

Traffic ZipCollectives::all_reduce(void* buf, size_t n, DType dtype, bool compressed) {
  const size_t P = size_t(world_), es = dtype_size(dtype);
  std::vector<size_t> counts(P);
  for (size_t r = 0; r < P; ++r) counts[r] = n / P + (r < n % P ? 1 : 0);
  const size_t mine = counts[size_t(rank_)];
  if (reduced_.size() < mine * es) reduced_.resize(mine * es);
  const Traffic a = reduce_scatter(buf, reduced_.data(), counts, dtype, compressed);
  const Traffic b = all_gather(reduced_.data(), buf, counts, dtype, compressed);
  return {a.sent + b.sent, a.received + b.received, a.all_raw + b.all_raw,
          a.all_packed + b.all_packed};
}

}  // namespace gossamer::comm::zip
