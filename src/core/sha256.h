// SHA-256 (FIPS 180-4), used to verify downloaded artefacts such as tokenizer files.
// Sha256 is incremental: update() any number of times, then digest() once; the object
// cannot be reused after digest(). Hex output is lower-case, 64 characters.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gossamer {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  std::array<uint8_t, 32> digest();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
  bool finished_ = false;
};

std::string sha256_hex(std::string_view data);
// Hashes a file's contents; throws gossamer::Error naming the path if it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace gossamer
