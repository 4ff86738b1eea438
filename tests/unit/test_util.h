// Helpers shared by the unit tests: a temporary directory removed at scope exit, a check that
// a call throws gossamer::Error with a message containing given parts, the message of the
// error a call throws, the temporary files an atomic write may have left in a directory, and
// the relative distance of two vectors.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/error.h"

namespace gossamer::testing {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/gossamer_test_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw Error("mkdtemp failed for " + tmpl);
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Expects fn to throw gossamer::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& fn,
                         std::initializer_list<std::string> parts) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "message '" << msg << "' lacks '" << p << "'";
    return;
  }
  ADD_FAILURE() << "expected a gossamer::Error";
}

// The message of the gossamer::Error fn throws, or "(no error)".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Entries of `dir` (not recursive) whose name holds ".tmp": what an interrupted or failed
// atomic write (io/atomic_file.h, io/staging_dir.h) would leave behind.
inline std::vector<std::string> temporaries_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp") != std::string::npos) out.push_back(name);
  }
  return out;
}

// |a - b| / |b| (Euclidean norms, summed in double): how far a is from b, relative to b.
inline double relative_distance(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d += (double(a[i]) - b[i]) * (a[i] - b[i]), n += double(b[i]) * b[i];
  return std::sqrt(d / n);
}

}  // namespace gossamer::testing
