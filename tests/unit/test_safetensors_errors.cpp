// Tests of io/safetensors' errors: every corruption of a file's header or layout is a clear
// error naming the file and the tensor, a missing or non-regular file too, the writer rejects
// bad tensors, and writes are atomic (no temporary left behind, an unwritable target is a
// clear error, a failed rename removes the temporary).
#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "safetensors_test_util.h"
#include "test_util.h"

namespace gossamer::io {
namespace {

using namespace gossamer::testing;

namespace fs = std::filesystem;

// ---- validation ------------------------------------------------------------------------

// A valid two-tensor file whose header we then edit. Returns {header, data}.
struct Parts {
  std::string header;
  Bytes data;
};

Parts valid_parts() {
  Parts p;
  p.header = R"({"alpha":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
             R"("beta":{"dtype":"I32","shape":[3],"data_offsets":[16,28]}})";
  p.data.assign(28, 0x11);
  return p;
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  if (at == std::string::npos) throw std::runtime_error("replace_once: '" + from + "' not found");
  return s.replace(at, from.size(), to);
}

struct CorruptCase {
  const char* what;
  std::function<Bytes()> make;
  std::vector<std::string> must_mention;  // besides the file path
};

TEST(Safetensors, ValidParts) {
  TempDir dir;
  Parts p = valid_parts();
  write_bytes(dir.file("ok.safetensors"), build_file(p.header, p.data));
  SafetensorsReader r(dir.file("ok.safetensors"));
  EXPECT_EQ(r.names(), (std::vector<std::string>{"alpha", "beta"}));
}

TEST(Safetensors, EveryCorruptionIsAClearError) {
  auto edit = [](const std::string& from, const std::string& to) {
    return [from, to] {
      Parts p = valid_parts();
      return build_file(replace_once(p.header, from, to), p.data);
    };
  };
  auto valid = [] {
    Parts p = valid_parts();
    return build_file(p.header, p.data);
  };
  std::vector<CorruptCase> cases = {
      {"file shorter than 8 bytes",
       [] {
         return Bytes{1, 2, 3};
       },
       {"at least 8"}},
      {"empty file", [] { return Bytes{}; }, {"at least 8"}},
      {"header length beyond the file",
       [&] {
         Bytes b = valid();
         b[0] = 0xff, b[1] = 0x10;  // 0x10ff = 4351 > file size
         return b;
       },
       {"4351", "truncated"}},
      {"header length over 100 MB",
       [&] {
         Bytes b = valid();
         uint64_t n = 100'000'001;
         std::memcpy(b.data(), &n, 8);
         return b;
       },
       {"100000001", "limit"}},
      {"truncated inside the header",
       [&] {
         Bytes b = valid();
         b.erase(b.begin() + 40, b.end());
         return b;
       },
       {"truncated"}},
      {"header not JSON", edit("{\"alpha\"", "{alpha\""), {"not valid JSON"}},
      {"header not an object",
       [] { return build_file("[1, 2, 3]", {}); },
       {"array", "expected an object"}},
      {"header empty", [] { return build_file("", {}); }, {"not valid JSON"}},
      {"entry not an object",
       edit(R"({"dtype":"I32","shape":[3],"data_offsets":[16,28]})", "7"),
       {"beta", "number"}},
      {"missing dtype", edit(R"("dtype":"I32",)", ""), {"beta", "missing 'dtype'"}},
      {"missing shape", edit(R"("shape":[2,2],)", ""), {"alpha", "missing 'shape'"}},
      {"missing data_offsets",
       edit(R"(,"data_offsets":[16,28])", ""),
       {"beta", "missing 'data_offsets'"}},
      {"unknown key in entry",
       edit(R"("dtype":"I32",)", R"("dtype":"I32","extra":1,)"),
       {"beta", "unknown key 'extra'"}},
      {"unknown dtype", edit("\"I32\"", "\"I33\""), {"beta", "unknown dtype 'I33'", "F32"}},
      {"dtype not a string", edit("\"I32\"", "4"), {"beta", "dtype"}},
      {"negative shape", edit("[3]", "[-3]"), {"beta", "shape[0]", "-3"}},
      {"fractional shape", edit("[3]", "[3.5]"), {"beta", "shape[0]"}},
      {"shape not an array", edit("[3]", "3"), {"beta", "shape is a JSON number"}},
      {"overflowing shape", edit("[2,2]", "[4611686018427387904,4]"), {"alpha", "overflow"}},
      {"shape product overflows with the dtype size",
       edit("[2,2]", "[4611686018427387904]"),
       {"alpha", "overflow"}},
      {"end < begin", edit("[16,28]", "[28,16]"), {"beta", "end < begin"}},
      {"size mismatch", edit("[3]", "[4]"), {"beta", "span 12 bytes, expected 16"}},
      {"data_offsets wrong arity", edit("[16,28]", "[16]"), {"beta", "data_offsets"}},
      {"data_offsets negative", edit("[0,16]", "[-16,0]"), {"alpha", "data_offsets"}},
      {"offsets out of the buffer", edit("[16,28]", "[20,32]"), {"beta", "exceed", "28 bytes"}},
      {"truncated data",
       [&] {
         Bytes b = valid();
         b.erase(b.end() - 4, b.end());
         return b;
       },
       {"beta", "exceed", "truncated"}},
      {"overlapping tensors", edit("[16,28]", "[12,24]"), {"beta", "alpha", "overlap"}},
      {"gap between tensors",
       [] {
         Parts p = valid_parts();
         p.header = replace_once(p.header, "[16,28]", "[20,32]");
         p.data.insert(p.data.end(), 4, 0x22);  // 28 -> 32 bytes
         return build_file(p.header, p.data);
       },
       {"beta", "gap", "expected begin 16"}},
      {"trailing bytes after the last tensor",
       [&] {
         Bytes b = valid();
         b.push_back(0);
         return b;
       },
       {"beta", "trailing", "29 bytes"}},
      {"duplicate tensor name",
       [] {
         Parts p = valid_parts();
         p.header = replace_once(p.header, "\"beta\"", "\"alpha\"");
         return build_file(p.header, p.data);
       },
       {"alpha", "duplicate"}},
      {"metadata not an object",
       edit("{\"alpha\"", R"({"__metadata__":[1],"alpha")"),
       {"__metadata__"}},
      {"metadata value not a string",
       edit("{\"alpha\"", R"({"__metadata__":{"lr":0.1},"alpha")"),
       {"__metadata__", "'lr'"}},
  };

  TempDir dir;
  for (size_t i = 0; i < cases.size(); ++i) {
    const CorruptCase& c = cases[i];
    SCOPED_TRACE(c.what);
    const std::string path = dir.file("corrupt_" + std::to_string(i) + ".safetensors");
    write_bytes(path, c.make());
    std::string msg = one_line_error([&] { SafetensorsReader r(path); });
    EXPECT_TRUE(contains(msg, path)) << "no file name in: " << msg;
    for (const std::string& m : c.must_mention) {
      EXPECT_TRUE(contains(msg, m)) << "'" << m << "' not in: " << msg;
    }
  }
}

TEST(Safetensors, MissingOrNonRegularFile) {
  TempDir dir;
  std::string msg = one_line_error([&] { SafetensorsReader r(dir.file("absent.safetensors")); });
  EXPECT_TRUE(contains(msg, "absent.safetensors") && contains(msg, "No such file")) << msg;
  msg = one_line_error([&] { SafetensorsReader r(dir.path()); });
  EXPECT_TRUE(contains(msg, "not a regular file")) << msg;
}

// ---- writer ------------------------------------------------------------------------------

TEST(Safetensors, WriterRejectsBadTensors) {
  float x = 0;
  SafetensorsWriter w;
  w.add("x", DType::DTYPE_F32, {1}, &x);
  std::string msg = one_line_error([&] { w.add("x", DType::DTYPE_F32, {1}, &x); });
  EXPECT_TRUE(contains(msg, "duplicate") && contains(msg, "'x'")) << msg;
  msg = one_line_error([&] { w.add("", DType::DTYPE_F32, {1}, &x); });
  EXPECT_TRUE(contains(msg, "invalid tensor name")) << msg;
  msg = one_line_error([&] { w.add("__metadata__", DType::DTYPE_F32, {1}, &x); });
  EXPECT_TRUE(contains(msg, "__metadata__")) << msg;
  msg = one_line_error([&] { w.add("neg", DType::DTYPE_F32, {2, -1}, &x); });
  EXPECT_TRUE(contains(msg, "'neg'") && contains(msg, "[2, -1]")) << msg;
  msg = one_line_error([&] { w.add("null", DType::DTYPE_F32, {3}, nullptr); });
  EXPECT_TRUE(contains(msg, "'null'") && contains(msg, "null data")) << msg;
  msg = one_line_error([&] { w.add("bad\xff", DType::DTYPE_F32, {1}, &x); });
  EXPECT_TRUE(contains(msg, "UTF-8")) << msg;
}

TEST(Safetensors, WriteLeavesNoTmpAndOverwrites) {
  TempDir dir;
  const std::string path = dir.file("out.safetensors");
  std::vector<float> v1 = {1, 2, 3}, v2 = {4, 5};
  SafetensorsWriter w1;
  w1.add("v", DType::DTYPE_F32, {3}, v1.data());
  w1.write(path);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(temporaries_in(dir.path()), std::vector<std::string>{});
  SafetensorsWriter w2;
  w2.add("v", DType::DTYPE_F32, {2}, v2.data());
  w2.write(path);
  EXPECT_EQ(temporaries_in(dir.path()), std::vector<std::string>{});
  EXPECT_EQ(SafetensorsReader(path).read_as<float>("v", {2}), v2);
  // Only the target file is in the directory.
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) n += e.is_regular_file();
  EXPECT_EQ(n, 1u);
}

TEST(Safetensors, UnwritableDirectoryIsAClearError) {
  TempDir dir;
  float x = 1;
  SafetensorsWriter w;
  w.add("x", DType::DTYPE_F32, {1}, &x);

  const std::string missing = dir.file("no_such_dir") + "/m.safetensors";
  std::string msg = one_line_error([&] { w.write(missing); });
  EXPECT_TRUE(contains(msg, missing) && contains(msg, "No such file or directory")) << msg;

  // A regular file where a directory is expected (works even when running as root).
  write_bytes(dir.file("plain"), {1});
  const std::string under_file = dir.file("plain") + "/m.safetensors";
  msg = one_line_error([&] { w.write(under_file); });
  EXPECT_TRUE(contains(msg, under_file) && contains(msg, "Not a directory")) << msg;

  // A read-only directory (only meaningful when not root: root bypasses permissions).
  if (::geteuid() != 0) {
    fs::create_directory(dir.file("ro"));
    fs::permissions(dir.file("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    const std::string ro = dir.file("ro") + "/m.safetensors";
    msg = one_line_error([&] { w.write(ro); });
    EXPECT_TRUE(contains(msg, ro) && contains(msg, "Permission denied")) << msg;
    fs::permissions(dir.file("ro"), fs::perms::owner_all);
  }
}

TEST(Safetensors, FailedRenameRemovesTmp) {
  TempDir dir;
  const std::string path = dir.file("is_a_dir");
  fs::create_directory(path);
  fs::create_directory(path + "/child");  // non-empty: rename(2) onto it must fail
  float x = 1;
  SafetensorsWriter w;
  w.add("x", DType::DTYPE_F32, {1}, &x);
  std::string msg = one_line_error([&] { w.write(path); });
  EXPECT_TRUE(contains(msg, path) && contains(msg, "rename")) << msg;
  EXPECT_EQ(temporaries_in(dir.path()), std::vector<std::string>{});
  EXPECT_TRUE(fs::is_directory(path + "/child"));
}

}  // namespace
}  // namespace gossamer::io
