// What the multi-rank communicator tests (tests/mpi/test_comm*.cpp) share: CommBuffer, a
// payload on the communicator's side (host, or device for nccl) between two guard bands that
// catch out-of-bounds writes, and data whose every reduction is exact: small integers per
// (rank, element, salt), so any summation order gives the same result and each check is a count
// of wrong elements that must be 0. Also the count patterns for the variable-count collectives
// (all_to_all_v: count matrices, and the parts every rank sends and must receive).
// Invariant: value(dtype, world, rank, i, salt) * world fits every dtype exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/bf16.h"
#include "core/error.h"
#ifdef GOSSAMER_HAVE_NCCL
#include "kernels/cuda/memory.cuh"
#endif

namespace gossamer::comm::test {

constexpr DType kDTypes[] = {DType::F32, DType::BF16, DType::I32, DType::I64, DType::U8};
constexpr ReduceOp kOps[] = {ReduceOp::SUM, ReduceOp::MAX, ReduceOp::MIN};
constexpr size_t kSizes[] = {1, 7, 1023, 65537};
constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;
constexpr uint8_t kJunkByte = 0xEE;

using Bytes = std::vector<uint8_t>;

// A payload of `bytes` on the communicator's side (host, or device for nccl) between two guard
// bands of kGuardByte.
class CommBuffer {
 public:
  CommBuffer(const Communicator& comm, size_t bytes, uint8_t fill = kJunkByte)
      : device_(comm.device_buffers()), bytes_(bytes) {
    if (bytes > (size_t{1} << 32)) throw Error("CommBuffer: test buffers stay below 4 GiB");
    Bytes init;
    init.insert(init.end(), kGuard, kGuardByte);
    init.insert(init.end(), bytes, fill);
    init.insert(init.end(), kGuard, kGuardByte);
    if (device_) {
#ifdef GOSSAMER_HAVE_NCCL
      base_ = kernels::cuda::kMemory.alloc(init.size());
      kernels::cuda::kMemory.upload(base_, init.data(), init.size());
#endif
    } else {
      host_ = std::move(init);
      base_ = host_.data();
    }
  }
  ~CommBuffer() {
#ifdef GOSSAMER_HAVE_NCCL
    if (device_) kernels::cuda::kMemory.free(base_, bytes_ + 2 * kGuard);
#endif
  }
  CommBuffer(const CommBuffer&) = delete;
  CommBuffer& operator=(const CommBuffer&) = delete;

  void* data() {
    return static_cast<char*>(base_) + kGuard;
  }
  void* at(size_t byte_offset) {
    return static_cast<char*>(data()) + byte_offset;
  }
  void upload(const Bytes& b, size_t byte_offset = 0) {
    copy_in(b.data(), b.size(), byte_offset);
  }
  Bytes download(size_t byte_offset = 0, size_t n = SIZE_MAX) const {
    n = std::min(n, bytes_ - byte_offset);
    Bytes all = whole();
    return Bytes(all.begin() + long(kGuard + byte_offset),
                 all.begin() + long(kGuard + byte_offset + n));
  }
  bool guards_intact() const {
    const Bytes all = whole();
    for (size_t i = 0; i < kGuard; ++i)
      if (all[i] != kGuardByte || all[kGuard + bytes_ + i] != kGuardByte) return false;
    return true;
  }

 private:
  void copy_in(const void* src, size_t n, size_t byte_offset) {
    char* dst = static_cast<char*>(data()) + byte_offset;
    if (!device_) {
      if (n) std::memcpy(dst, src, n);
      return;
    }
#ifdef GOSSAMER_HAVE_NCCL
    kernels::cuda::kMemory.upload(dst, src, n);
#endif
  }
  Bytes whole() const {
    if (!device_) return host_;
    Bytes all(bytes_ + 2 * kGuard);
#ifdef GOSSAMER_HAVE_NCCL
    kernels::cuda::kMemory.download(all.data(), base_, all.size());
#endif
    return all;
  }

  bool device_;
  size_t bytes_;
  Bytes host_;
  void* base_ = nullptr;
};

// ---- exactly representable data ---------------------------------------------------------------

// A small integer for element i on rank r: unsigned in [0, m), signed in [-m/2, m/2), with
// m * world <= 256, so sums of all ranks are exact in bf16 and fit in uint8.
inline int64_t value(DType dtype, int world, int rank, size_t i, int salt) {
  const int64_t m = std::max<int64_t>(2, 256 / world);
  const int64_t v =
      int64_t((i * 131 + size_t(rank) * 71 + size_t(salt) * 17 + (i >> 3) * 7) % size_t(m));
  return dtype == DType::U8 ? v : v - m / 2;
}

inline void put(Bytes& b, DType dtype, size_t i, int64_t v) {
  const size_t es = dtype_size(dtype);
  if (b.size() < (i + 1) * es) b.resize((i + 1) * es);
  uint8_t* p = b.data() + i * es;
  switch (dtype) {
    case DType::F32: {
      const float f = float(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::BF16: {
      const uint16_t h = float_to_bf16(float(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::I32: {
      const int32_t x = int32_t(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case DType::I64:
      std::memcpy(p, &v, 8);
      return;
    case DType::U8:
      *p = uint8_t(v);
      return;
  }
}

// Element i of rank r's data.
inline Bytes rank_data(DType dtype, size_t n, int world, int rank, int salt, size_t first = 0) {
  Bytes b(n * dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) put(b, dtype, i, value(dtype, world, rank, first + i, salt));
  return b;
}

inline int64_t reduce(ReduceOp op, DType dtype, int world, size_t i, int salt) {
  int64_t acc = value(dtype, world, 0, i, salt);
  for (int r = 1; r < world; ++r) {
    const int64_t v = value(dtype, world, r, i, salt);
    acc = op == ReduceOp::SUM ? acc + v : op == ReduceOp::MAX ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

// Reduced elements [first, first + n).
inline Bytes reduced(ReduceOp op, DType dtype, size_t first, size_t n, int world, int salt) {
  Bytes b(n * dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) put(b, dtype, i, reduce(op, dtype, world, first + i, salt));
  return b;
}

inline size_t count_wrong(const Bytes& got, const Bytes& expected, DType dtype) {
  const size_t es = dtype_size(dtype);
  if (got.size() != expected.size()) return std::max(got.size(), expected.size()) / es;
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); i += es)
    wrong += std::memcmp(got.data() + i, expected.data() + i, es) != 0;
  return wrong;
}

inline std::string label(DType dtype, const char* what, size_t n) {
  return strprintf("%s %s n=%zu", dtype_name(dtype), what, n);
}

// Count vectors for reduce_scatter / all_gather: equal, unequal with zeros, one big part.
inline std::vector<std::vector<size_t>> count_patterns(int world) {
  std::vector<std::vector<size_t>> p(5, std::vector<size_t>(size_t(world)));
  for (int r = 0; r < world; ++r) {
    p[0][size_t(r)] = 7;
    p[1][size_t(r)] = 1023;
    p[2][size_t(r)] = r == 1 ? 0 : size_t(1 + 13 * r);
    p[3][size_t(r)] = r == 0 ? 65537 : (r % 2 ? 0 : 3);
    p[4][size_t(r)] = 0;
  }
  return p;
}

// Count matrices for all_to_all_v, row-major: m[s * world + d] = elements rank s sends to rank d.
// Unequal with zeros, nothing at all, nothing for oneself, equal, one big sender, and rank 0 alone
// small (so that with a small chunk limit some ranks' totals fit one MPI call and others' do not).
inline std::vector<std::vector<size_t>> all_to_all_patterns(int world) {
  const size_t w = size_t(world);
  std::vector<std::vector<size_t>> p(6, std::vector<size_t>(w * w));
  for (int s = 0; s < world; ++s)
    for (int d = 0; d < world; ++d) {
      const size_t k = size_t(s) * w + size_t(d);
      p[0][k] = size_t((s * 7 + d * 3) % 5);
      p[1][k] = 0;
      p[2][k] = s == d ? 0 : size_t(1 + s + 2 * d);
      p[3][k] = 1023;
      p[4][k] = s == 0 ? 65537 : (d % 2 ? 0 : size_t(13 + s));
      p[5][k] = s == 0 || d == 0 ? 1 : 20;
    }
  return p;
}

// What rank `rank` sends (row) and receives (column) under count matrix m.
inline std::vector<size_t> send_counts(const std::vector<size_t>& m, int world, int rank) {
  return std::vector<size_t>(m.begin() + long(rank) * world, m.begin() + long(rank + 1) * world);
}
inline std::vector<size_t> recv_counts(const std::vector<size_t>& m, int world, int rank) {
  std::vector<size_t> c(static_cast<size_t>(world));
  for (int s = 0; s < world; ++s) c[size_t(s)] = m[size_t(s * world + rank)];
  return c;
}

// Rank s's part for rank d: elements [1000 d, 1000 d + m[s][d]) of rank s's data, so that every
// part differs. all_to_all_input: what `rank` sends; all_to_all_output: what it must receive.
inline Bytes all_to_all_part(DType dtype, const std::vector<size_t>& m, int world, int s, int d,
                             int salt) {
  return rank_data(dtype, m[size_t(s * world + d)], world, s, salt, 1000 * size_t(d));
}
inline Bytes all_to_all_input(DType dtype, const std::vector<size_t>& m, int world, int rank,
                              int salt) {
  Bytes b;
  for (int d = 0; d < world; ++d) {
    const Bytes p = all_to_all_part(dtype, m, world, rank, d, salt);
    b.insert(b.end(), p.begin(), p.end());
  }
  return b;
}
inline Bytes all_to_all_output(DType dtype, const std::vector<size_t>& m, int world, int rank,
                               int salt) {
  Bytes b;
  for (int s = 0; s < world; ++s) {
    const Bytes p = all_to_all_part(dtype, m, world, s, rank, salt);
    b.insert(b.end(), p.begin(), p.end());
  }
  return b;
}

inline size_t sum(const std::vector<size_t>& c) {
  size_t s = 0;
  for (size_t x : c) s += x;
  return s;
}
inline size_t offset(const std::vector<size_t>& c, int rank) {
  size_t s = 0;
  for (int r = 0; r < rank; ++r) s += c[size_t(r)];
  return s;
}

}  // namespace gossamer::comm::test
