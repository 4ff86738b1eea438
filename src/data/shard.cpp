// Token shard writer and reader (layout in shard.h). The writer is atomic (io/atomic_file.h):
// a reader never sees a half-written shard, and a failure leaves no temporary file behind.
// The reader validates the header against the exact file length before any token is served,
// then keeps a read-only mmap of the whole file for the reader's lifetime.
// Shards are little-endian (llm.c's layout); big-endian hosts are rejected at compile time.
#include "data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"

namespace gossamer::data {

static_assert(std::endian::native == std::endian::little, "token shards are little-endian");

namespace {

constexpr size_t kHeaderBytes = kShardHeaderInts * sizeof(int32_t);

}  // namespace

void write_shard(const std::string& path, std::span<const uint32_t> tokens, int version) {
  GOSSAMER_CHECK(version == 0 || version == kShardVersionU16 || version == kShardVersionU32,
                 "shard %s: cannot write version %d (expected 0 = auto, 1 or 2)", path.c_str(),
                 version);
  GOSSAMER_CHECK(tokens.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
                 "shard %s: %zu tokens do not fit the int32 token count of the header",
                 path.c_str(), tokens.size());
  const uint32_t max_token = tokens.empty() ? 0 : *std::max_element(tokens.begin(), tokens.end());
  if (version == 0) version = max_token <= 0xFFFF ? kShardVersionU16 : kShardVersionU32;
  if (version == kShardVersionU16 && max_token > 0xFFFF) {
    const auto it =
        std::find_if(tokens.begin(), tokens.end(), [](uint32_t t) { return t > 0xFFFF; });
    fail(
        "shard %s: token %u at offset %zu does not fit version 1 (uint16, max 65535); use version "
        "2",
        path.c_str(), *it, static_cast<size_t>(it - tokens.begin()));
  }

  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = version;
  header[2] = static_cast<int32_t>(tokens.size());

  io::AtomicFile out(path);
  out.write(header, sizeof(header));
  if (version == kShardVersionU32) {
    out.write(tokens.data(), tokens.size_bytes());
  } else {
    constexpr size_t kChunk = size_t{1} << 16;
    std::vector<uint16_t> buf(std::min(kChunk, tokens.size()));
    for (size_t i = 0; i < tokens.size(); i += kChunk) {
      const size_t n = std::min(kChunk, tokens.size() - i);
      for (size_t j = 0; j < n; ++j) buf[j] = static_cast<uint16_t>(tokens[i + j]);
      out.write(buf.data(), n * sizeof(uint16_t));
    }
  }
  out.commit();
}

ShardReader::ShardReader(const std::string& path) : path_(path) {
  const char* p = path_.c_str();
  const int fd = ::open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("shard %s: cannot open: %s", p, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail("shard %s: cannot stat: %s", p, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("shard %s: not a regular file", p);
  }
  const auto file_bytes = static_cast<uint64_t>(st.st_size);
  mtime_ns_ = uint64_t(st.st_mtim.tv_sec) * 1000000000ull + uint64_t(st.st_mtim.tv_nsec);
  if (file_bytes < kHeaderBytes) {
    ::close(fd);
    fail("shard %s: truncated header: file is %llu bytes, the header alone needs %zu", p,
         static_cast<unsigned long long>(file_bytes), kHeaderBytes);
  }
  void* m = ::mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping stays valid
  if (m == MAP_FAILED) fail("shard %s: cannot mmap: %s", p, std::strerror(map_errno));
  map_ = static_cast<const unsigned char*>(m);
  map_bytes_ = file_bytes;

  try {
    int32_t header[3];
    std::memcpy(header, map_, sizeof(header));
    if (header[0] != kShardMagic) {
      fail("shard %s: bad magic: expected %d, found %d (not a token shard)", p, kShardMagic,
           header[0]);
    }
    if (header[1] != kShardVersionU16 && header[1] != kShardVersionU32) {
      fail("shard %s: unsupported version: expected 1 (uint16) or 2 (uint32), found %d", p,
           header[1]);
    }
    if (header[2] < 0) fail("shard %s: bad token count: expected >= 0, found %d", p, header[2]);
    version_ = header[1];
    num_tokens_ = static_cast<uint64_t>(header[2]);
    const uint64_t token_bytes = version_ == kShardVersionU16 ? 2 : 4;
    const uint64_t expected = kHeaderBytes + num_tokens_ * token_bytes;
    if (file_bytes != expected) {
      fail(
          "shard %s: %s: file length is %llu bytes, expected %llu (1024-byte header + %llu "
          "tokens x %llu bytes)",
          p, file_bytes < expected ? "truncated shard" : "trailing bytes",
          static_cast<unsigned long long>(file_bytes), static_cast<unsigned long long>(expected),
          static_cast<unsigned long long>(num_tokens_),
          static_cast<unsigned long long>(token_bytes));
    }
  } catch (...) {
    close();
    throw;
  }
}

ShardReader::~ShardReader() {
  close();
}

ShardReader::ShardReader(ShardReader&& other) noexcept
    : path_(std::move(other.path_)),
      version_(other.version_),
      num_tokens_(other.num_tokens_),
      mtime_ns_(other.mtime_ns_),
      map_(std::exchange(other.map_, nullptr)),
      map_bytes_(std::exchange(other.map_bytes_, 0)) {
  other.version_ = 0;
  other.num_tokens_ = 0;
}

ShardReader& ShardReader::operator=(ShardReader&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    version_ = std::exchange(other.version_, 0);
    num_tokens_ = std::exchange(other.num_tokens_, 0);
    mtime_ns_ = other.mtime_ns_;
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
  }
  return *this;
}

void ShardReader::close() {
  if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
}

void ShardReader::read(uint64_t start, std::span<int32_t> out) const {
  if (start > num_tokens_ || out.size() > num_tokens_ - start) {
    fail("shard %s: read of tokens [%llu, %llu) is out of range (the shard has %llu tokens)",
         path_.c_str(), static_cast<unsigned long long>(start),
         static_cast<unsigned long long>(start + out.size()),
         static_cast<unsigned long long>(num_tokens_));
  }
  if (out.empty()) return;
  const unsigned char* body = map_ + kHeaderBytes;
  if (version_ == kShardVersionU32) {
    // Same bit pattern; tokens >= 2^31 come out negative and are caught by vocab checks.
    std::memcpy(out.data(), body + start * sizeof(uint32_t), out.size_bytes());
  } else {
    // The map is page-aligned and the header is 1024 bytes, so uint16 tokens are aligned.
    const auto* src = reinterpret_cast<const uint16_t*>(body) + start;
    int32_t* dst = out.data();
    const size_t n = out.size();
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

namespace {

template <class Token>
uint32_t max_of(const Token* t, uint64_t n) {
  Token max = 0;
#pragma omp parallel for simd reduction(max : max) schedule(static)
  for (uint64_t i = 0; i < n; ++i) max = t[i] > max ? t[i] : max;
  return max;
}

template <class Token>
uint64_t first_at_least(const Token* t, uint64_t n, uint32_t limit) {
  for (uint64_t i = 0; i < n; ++i)
    if (uint64_t(t[i]) >= limit) return i;
  return n;
}

// The verdict cache next to a shard: ".NAME.max_token" holding "SIZE MTIME_NS MAX".
std::string verdict_path(const std::string& shard) {
  const std::filesystem::path p(shard);
  return (p.parent_path() / strprintf(".%s.max_token", p.filename().c_str())).string();
}

}  // namespace

uint32_t ShardReader::max_token() const {
  const std::string cache = verdict_path(path_);
  {
    std::ifstream in(cache);
    unsigned long long size = 0, mtime = 0, max = 0;
    if (in >> size >> mtime >> max && size == map_bytes_ && mtime == mtime_ns_)
      return uint32_t(max);
  }
  const unsigned char* body = map_ + kHeaderBytes;
  const uint32_t max = version_ == kShardVersionU32
                           ? max_of(reinterpret_cast<const uint32_t*>(body), num_tokens_)
                           : max_of(reinterpret_cast<const uint16_t*>(body), num_tokens_);
  try {  // a cache: a directory we may not write into costs a rescan next time, nothing else
    io::write_file_atomically(cache, strprintf("%llu %llu %u\n", (unsigned long long)map_bytes_,
                                               (unsigned long long)mtime_ns_, max));
  } catch (const Error&) {
  }
  return max;
}

void ShardReader::check_tokens_below(uint32_t limit) const {
  if (max_token() < limit) return;  // the common case: one pass, or none with the cache
  const unsigned char* body = map_ + kHeaderBytes;
  uint64_t bad = num_tokens_;
  uint32_t token = 0;
  if (version_ == kShardVersionU32) {
    const auto* t = reinterpret_cast<const uint32_t*>(body);
    bad = first_at_least(t, num_tokens_, limit);
    if (bad < num_tokens_) token = t[bad];
  } else {
    const auto* t = reinterpret_cast<const uint16_t*>(body);
    bad = first_at_least(t, num_tokens_, limit);
    if (bad < num_tokens_) token = t[bad];
  }
  GOSSAMER_CHECK(bad < num_tokens_, "shard %s: its verdict cache %s is stale (delete it)",
                 path_.c_str(), verdict_path(path_).c_str());
  fail("shard %s: token %u at offset %llu is outside the vocabulary (expected < %u)", path_.c_str(),
       token, static_cast<unsigned long long>(bad), limit);
}

}  // namespace gossamer::data
