// Token shards in llm.c's layout: a header of 256 int32 (magic 20240520, version, token
// count, rest zero) followed by the tokens. Version 1 stores uint16 tokens (llm.c's, for
// vocabularies up to 65,536), version 2 uint32 tokens (ours, for larger vocabularies).
// Invariant: a ShardReader only exists for a file whose header and size were validated
// (magic, version, count, exact file length); tokens are read from a read-only mmap.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace gossamer::data {

constexpr int32_t kShardMagic = 20240520;
constexpr int kShardHeaderInts = 256;
constexpr int kShardVersionU16 = 1;
constexpr int kShardVersionU32 = 2;

// Writes tokens as a shard at `path` (atomically: temporary file in the same directory, then
// rename). version 0 picks 1 when every token fits in uint16, else 2. Throws gossamer::Error
// (naming the path) on I/O failure or when a token does not fit the requested version.
void write_shard(const std::string& path, std::span<const uint32_t> tokens, int version = 0);

class ShardReader {
 public:
  // Opens and validates; throws gossamer::Error naming the file, the field (magic, version,
  // token count, file length) and the expected vs found value.
  explicit ShardReader(const std::string& path);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;
  ShardReader(ShardReader&& other) noexcept;
  ShardReader& operator=(ShardReader&& other) noexcept;

  const std::string& path() const { return path_; }
  int version() const { return version_; }
  uint64_t num_tokens() const { return num_tokens_; }
  // The largest token: one vectorised pass over the mapped tokens, remembered in a verdict cache
  // next to the shard (".NAME.max_token": size, mtime and the maximum), so a shard is scanned
  // once until it changes; a directory that cannot be written only costs the rescan.
  uint32_t max_token() const;
  // Throws naming the shard, the first offending token and its offset unless every token is
  // below `limit`.
  void check_tokens_below(uint32_t limit) const;
  // Copies tokens [start, start + out.size()) into out; throws if out of range.
  void read(uint64_t start, std::span<int32_t> out) const;

 private:
  void close();
  std::string path_;
  int version_ = 0;
  uint64_t num_tokens_ = 0;
  uint64_t mtime_ns_ = 0;  // of the file when opened
  const unsigned char* map_ = nullptr;
  size_t map_bytes_ = 0;
};

}  // namespace gossamer::data
