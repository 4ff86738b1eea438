// The decorator's collective algorithms (zip_collectives.h).
#include "comm/zip/zip_collectives.h"

#include <algorithm>
#include <cstring>

#include "comm/bf16.h"
#include "comm/op_args.h"
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

size_t sum(const std::vector<size_t>& v) {
  size_t s = 0;
  for (size_t x : v) s += x;
  return s;
}

}  // namespace

ZipCollectives::ZipCollectives(Communicator& inner, size_t segment_bytes, const CodecOptions& codec)
    : inner_(inner),
      segment_bytes_(segment_bytes),
      codec_(codec),
      rank_(inner.rank()),
      world_(inner.size()) {
  GOSSAMER_CHECK(segment_bytes_ >= 4, "zip: segment of %zu bytes, at least 4", segment_bytes_);
  for (Slot& s : slots_) {
    s.send_counts.assign(size_t(world_), 0);
    s.recv_counts.assign(size_t(world_), 0);
    s.src_offset.assign(size_t(world_), 0);
  }
}

size_t ZipCollectives::segment_elems(DType dtype) const {
  return std::max<size_t>(1, segment_bytes_ / dtype_size(dtype));
}

ZipCollectives::Layout ZipCollectives::layout(std::span<const size_t> counts, DType dtype) const {
  Layout L;
  L.es = dtype_size(dtype);
  L.seg = segment_elems(dtype);
  L.P = size_t(world_);
  const size_t longest = *std::max_element(counts.begin(), counts.end());
  L.segments = (longest + L.seg - 1) / L.seg;
  L.offset.resize(L.P);
  for (size_t r = 0; r < L.P; ++r) L.offset[r] = count_offset(counts, int(r));
  return L;
}

// encode(k, slot) -> Work of the sizes exchange (empty when none); issue(k, slot) -> Work of the
// data exchange; finish(k, slot) consumes segment k. Segment k+1 is encoded and its sizes
// exchanged while segment k is on the wire; segment k is finished while k+1 is.
template <class Encode, class Issue, class Finish>
void ZipCollectives::pipeline(size_t segments, Encode encode, Issue issue, Finish finish) {
  if (segments == 0) return;
  Work sizes = encode(size_t(0), slots_[0]);
  sizes.wait();
  Work data = issue(size_t(0), slots_[0]);
  for (size_t k = 0; k < segments; ++k) {
    Slot& now = slots_[k % 2];
    Slot& next = slots_[(k + 1) % 2];
    Work next_sizes, next_data;
    if (k + 1 < segments) next_sizes = encode(k + 1, next);
    data.wait();
    if (k + 1 < segments) {
      next_sizes.wait();
      next_data = issue(k + 1, next);
    }
    finish(k, now);
    data = next_data;
  }
}

Traffic ZipCollectives::reduce_scatter(const void* in_v, void* out_v,
                                       std::span<const size_t> counts, DType dtype,
                                       bool compressed) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  auto* out = static_cast<uint8_t*>(out_v);
  const Layout L = layout(counts, dtype);
  const size_t es = L.es, seg = L.seg, P = L.P, segments = L.segments;
  const std::vector<size_t>& offset = L.offset;
  if (acc_.size() < std::min(seg, counts[size_t(rank_)]))
    acc_.resize(std::min(seg, counts[size_t(rank_)]));
  Traffic t;
  const int64_t size_bytes = compressed ? int64_t((P - 1) * P * 8) : 0;
  auto encode = [&](size_t k, Slot& s) -> Work {
    std::fill(s.send_counts.begin(), s.send_counts.end(), 0);
    size_t cap = 0;
    for (size_t r = 0; r < P; ++r)
      if (int(r) != rank_ && part_len(counts, int(r), k, seg) > 0)
        cap += compressed ? max_compressed_bytes(part_len(counts, int(r), k, seg), dtype,
                                                 codec_.chunk_elems)
                          : part_len(counts, int(r), k, seg) * es;
    if (s.send.size() < cap) s.send.resize(cap);
    size_t at = 0;
    for (size_t r = 0; r < P; ++r) {
      const size_t len = part_len(counts, int(r), k, seg);
      if (int(r) == rank_ || len == 0) continue;
      const uint8_t* src = in + (offset[r] + k * seg) * es;
      size_t bytes = len * es;
      if (compressed)
        bytes = compress(src, len, dtype, std::span<uint8_t>(s.send.data() + at, cap - at), codec_);
      else
        std::memcpy(s.send.data() + at, src, bytes);
      s.send_counts[r] = bytes;
      at += bytes;
    }
    if (!compressed) return Work();
    s.my_sizes.assign(s.send_counts.begin(), s.send_counts.end());
    s.all_sizes.resize(P * P);
    const std::vector<size_t> each(P, P);
    return inner_.all_gather(s.my_sizes.data(), s.all_sizes.data(), each, DType::I64);
  };
  auto issue = [&](size_t k, Slot& s) -> Work {
    size_t at = 0;
    for (size_t r = 0; r < P; ++r) {
      s.recv_counts[r] = int(r) == rank_ ? 0
                         : compressed    ? size_t(s.all_sizes[r * P + size_t(rank_)])
                                         : part_len(counts, rank_, k, seg) * es;
      s.src_offset[r] = at;
      at += s.recv_counts[r];
    }
    if (s.recv.size() < at) s.recv.resize(at);
    t.sent += int64_t(sum(s.send_counts)) + size_bytes;
    t.received += int64_t(at) + size_bytes;
    if (compressed) {
      for (size_t r = 0; r < P; ++r)
        for (size_t d = 0; d < P; ++d)
          if (r != d) {
            t.all_raw += part_len(counts, int(d), k, seg) * es;
            t.all_packed += s.all_sizes[r * P + d];
          }
    }
    return inner_.all_to_all_v(s.send.data(), s.send_counts, s.recv.data(), s.recv_counts,
                               DType::U8);
  };
  auto finish = [&](size_t k, Slot& s) {
    const size_t n = part_len(counts, rank_, k, seg);
    if (n == 0) return;
    float* acc = acc_.data();
    for (size_t r = 0; r < P; ++r) {
      const bool assign = r == 0;
      if (int(r) == rank_) {
        accumulate(in + (offset[r] + k * seg) * es, acc, n, dtype, assign);
      } else if (compressed) {
        decompress_accumulate(
            std::span<const uint8_t>(s.recv.data() + s.src_offset[r], s.recv_counts[r]), acc, n,
            dtype, assign, codec_.threads);
      } else {
        accumulate(s.recv.data() + s.src_offset[r], acc, n, dtype, assign);
      }
    }
    store(acc, out + k * seg * es, n, dtype);
  };
  pipeline(segments, encode, issue, finish);
  return t;
}

Traffic ZipCollectives::all_gather(const void* in_v, void* out_v, std::span<const size_t> counts,
                                   DType dtype, bool compressed) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  auto* out = static_cast<uint8_t*>(out_v);
  const Layout L = layout(counts, dtype);
  const size_t es = L.es, seg = L.seg, P = L.P, segments = L.segments;
  const std::vector<size_t>& offset = L.offset;
  const size_t mine = counts[size_t(rank_)];
  uint8_t* own = out + offset[size_t(rank_)] * es;
  if (own != in && mine > 0) std::memcpy(own, in, mine * es);
  Traffic t;
  const int64_t size_bytes = compressed ? int64_t((P - 1) * 8) : 0;
  auto encode = [&](size_t k, Slot& s) -> Work {
    std::fill(s.send_counts.begin(), s.send_counts.end(), 0);
    const size_t n = part_len(counts, rank_, k, seg);
    size_t bytes = n * es;
    const size_t cap = compressed ? max_compressed_bytes(n, dtype, codec_.chunk_elems) : bytes;
    if (s.send.size() < cap * (P - 1)) s.send.resize(cap * (P - 1));
    const uint8_t* src = in + k * seg * es;
    if (n > 0) {
      if (compressed)
        bytes = compress(src, n, dtype, std::span<uint8_t>(s.send.data(), cap), codec_);
      else
        std::memcpy(s.send.data(), src, bytes);
      for (size_t c = 1; c + 1 < P; ++c)
        std::memcpy(s.send.data() + c * bytes, s.send.data(), bytes);
    } else {
      bytes = 0;
    }
    for (size_t r = 0; r < P; ++r)
      if (int(r) != rank_) s.send_counts[r] = bytes;
    if (!compressed) return Work();
    s.my_sizes.assign(1, bytes);
    s.all_sizes.resize(P);
    const std::vector<size_t> each(P, 1);
    return inner_.all_gather(s.my_sizes.data(), s.all_sizes.data(), each, DType::I64);
  };
  auto issue = [&](size_t k, Slot& s) -> Work {
    size_t at = 0;
    for (size_t r = 0; r < P; ++r) {
      s.recv_counts[r] = int(r) == rank_ ? 0
                         : compressed    ? size_t(s.all_sizes[r])
                                         : part_len(counts, int(r), k, seg) * es;
      s.src_offset[r] = at;
      at += s.recv_counts[r];
    }
    if (s.recv.size() < at) s.recv.resize(at);
    t.sent += int64_t(sum(s.send_counts)) + size_bytes;
    t.received += int64_t(at) + size_bytes;
    if (compressed)
      for (size_t r = 0; r < P; ++r) {
        t.all_raw += (P - 1) * part_len(counts, int(r), k, seg) * es;
        t.all_packed += (P - 1) * s.all_sizes[r];
      }
    return inner_.all_to_all_v(s.send.data(), s.send_counts, s.recv.data(), s.recv_counts,
                               DType::U8);
  };
  auto finish = [&](size_t k, Slot& s) {
    for (size_t r = 0; r < P; ++r) {
      const size_t n = part_len(counts, int(r), k, seg);
      if (int(r) == rank_ || n == 0) continue;
      uint8_t* dst = out + (offset[r] + k * seg) * es;
      if (compressed)
        decompress(std::span<const uint8_t>(s.recv.data() + s.src_offset[r], s.recv_counts[r]), dst,
                   n, dtype, codec_.threads);
      else
        std::memcpy(dst, s.recv.data() + s.src_offset[r], n * es);
    }
  };
  pipeline(segments, encode, issue, finish);
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
