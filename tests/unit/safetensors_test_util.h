// Helpers shared by the safetensors tests (test_safetensors*.cpp): files as raw bytes, a file
// built exactly as the format lays it out (u64 little-endian header length, JSON header, data),
// and the one-line message of the error a call throws.
// Invariant: build_file writes what the spec says and nothing else, so a test can hand the
// reader any header, valid or not.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"

namespace gossamer::testing {

using Bytes = std::vector<unsigned char>;

inline Bytes read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

inline void put_u64(Bytes& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

// A file exactly as the spec lays it out: u64 LE header length, header, data.
inline Bytes build_file(const std::string& header, const Bytes& data) {
  Bytes b;
  put_u64(b, header.size());
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

template <class T>
inline Bytes as_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Returns the message of the gossamer::Error thrown by f, which must be one line; fails the
// test when f throws nothing or something else.
inline std::string one_line_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message is not one line: " << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-gossamer exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

inline bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

}  // namespace gossamer::testing
