// Tests of io/safetensors: round trips over dtypes and shapes (0-d and empty included),
// metadata, byte-exact layout against the format spec (as the reference implementation writes
// it), lookups and typed reads, and that the GPT-2 golden asset (scripts/make_golden.py
// --family gpt2) loads with the expected tensors. Validation errors and the writer's errors and
// atomic writes are test_safetensors_errors.cpp.
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

// ---- dtypes --------------------------------------------------------------------------

TEST(Safetensors, DTypeTable) {
  struct Row {
    DType dt;
    const char* name;
    size_t size;
  };
  const Row rows[] = {
      {DType::DTYPE_BOOL, "BOOL", 1}, {DType::DTYPE_U8, "U8", 1},
      {DType::DTYPE_I8, "I8", 1},     {DType::DTYPE_I16, "I16", 2},
      {DType::DTYPE_U16, "U16", 2},   {DType::DTYPE_F16, "F16", 2},
      {DType::DTYPE_BF16, "BF16", 2}, {DType::DTYPE_I32, "I32", 4},
      {DType::DTYPE_U32, "U32", 4},   {DType::DTYPE_F32, "F32", 4},
      {DType::DTYPE_I64, "I64", 8},   {DType::DTYPE_U64, "U64", 8},
      {DType::DTYPE_F64, "F64", 8},   {DType::DTYPE_F8_E4M3, "F8_E4M3", 1},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(dtype_size(r.dt), r.size) << r.name;
    EXPECT_STREQ(dtype_name(r.dt), r.name);
    ASSERT_TRUE(dtype_from_name(r.name).has_value()) << r.name;
    EXPECT_EQ(*dtype_from_name(r.name), r.dt);
  }
  EXPECT_FALSE(dtype_from_name("f32").has_value());
  EXPECT_FALSE(dtype_from_name("F128").has_value());
  EXPECT_FALSE(dtype_from_name("").has_value());
}

TEST(Safetensors, ShapeHelpers) {
  EXPECT_EQ(shape_to_string({}), "[]");
  EXPECT_EQ(shape_to_string({3, 13}), "[3, 13]");
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({0, 5}), 0);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
}

// ---- round trips -----------------------------------------------------------------------

TEST(Safetensors, RoundTripManyDTypesAndShapes) {
  TempDir dir;
  const std::string path = dir.file("rt.safetensors");
  std::vector<double> f64 = {1.5, -2.25, 3e300, -0.0, 1e-310, 6.0};
  std::vector<float> f32 = {1.0f, -2.0f, 3.5f, std::numeric_limits<float>::infinity()};
  std::vector<uint16_t> f16 = {0x3C00, 0xC000, 0x0001};           // 1, -2, 2^-24
  std::vector<uint16_t> bf16 = {0x3F80, 0xBF80, 0x4049, 0x0000};  // 1, -1, 3.140625, 0
  std::vector<int64_t> i64 = {-(int64_t{1} << 40), 7};
  std::vector<int32_t> i32 = {1, -2, 3, -4, 5, -6};
  std::vector<uint16_t> u16 = {0, 1, 65535, 4, 5};
  std::vector<uint8_t> u8 = {1, 2, 3, 4, 5, 6, 7};
  std::vector<uint32_t> u32 = {0xdeadbeefu};
  float scalar = 42.0f;

  SafetensorsWriter w;
  w.add("f64", DType::DTYPE_F64, {2, 3}, f64.data());
  w.add("u8", DType::DTYPE_U8, {7}, u8.data());  // odd byte count: later tensors unaligned
  w.add("f32", DType::DTYPE_F32, {4}, f32.data());
  w.add("f16", DType::DTYPE_F16, {3}, f16.data());
  w.add("bf16", DType::DTYPE_BF16, {2, 2}, bf16.data());
  w.add("i64", DType::DTYPE_I64, {2}, i64.data());
  w.add("i32", DType::DTYPE_I32, {3, 1, 2}, i32.data());
  w.add("u16", DType::DTYPE_U16, {5}, u16.data());
  w.add("u32", DType::DTYPE_U32, {1}, u32.data());
  w.add("scalar", DType::DTYPE_F32, {}, &scalar);
  w.add("empty", DType::DTYPE_F32, {0, 5}, nullptr);
  w.add("empty1d", DType::DTYPE_I32, {0}, nullptr);
  w.write(path);

  SafetensorsReader r(path);
  EXPECT_EQ(r.path(), path);
  EXPECT_EQ(r.size(), 12u);
  // Data order: the order added; the two empty tensors share the final offset (sorted by name).
  std::vector<std::string> expect_names = {"f64", "u8",  "f32", "f16",    "bf16",  "i64",
                                           "i32", "u16", "u32", "scalar", "empty", "empty1d"};
  EXPECT_EQ(r.names(), expect_names);
  EXPECT_TRUE(r.metadata().empty());

  auto check_raw = [&](const std::string& name, DType dt, const Shape& shape, const void* src,
                       size_t nbytes) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(r.contains(name));
    const TensorInfo& info = r.info(name);
    EXPECT_EQ(info.name, name);
    EXPECT_EQ(info.dtype, dt);
    EXPECT_EQ(info.shape, shape);
    EXPECT_EQ(info.nbytes(), nbytes);
    EXPECT_EQ(info.numel() * static_cast<int64_t>(dtype_size(dt)), static_cast<int64_t>(nbytes));
    if (nbytes) {
      EXPECT_EQ(std::memcmp(r.data(name), src, nbytes), 0);
    }
    std::vector<unsigned char> dst(nbytes + 1, 0xAB);
    r.read_into(name, dt, shape, dst.data());
    if (nbytes) {
      EXPECT_EQ(std::memcmp(dst.data(), src, nbytes), 0);
    }
    EXPECT_EQ(dst[nbytes], 0xAB) << "read_into wrote past nbytes";
  };
  check_raw("f64", DType::DTYPE_F64, {2, 3}, f64.data(), 48);
  check_raw("u8", DType::DTYPE_U8, {7}, u8.data(), 7);
  check_raw("f32", DType::DTYPE_F32, {4}, f32.data(), 16);
  check_raw("f16", DType::DTYPE_F16, {3}, f16.data(), 6);
  check_raw("bf16", DType::DTYPE_BF16, {2, 2}, bf16.data(), 8);
  check_raw("i64", DType::DTYPE_I64, {2}, i64.data(), 16);
  check_raw("i32", DType::DTYPE_I32, {3, 1, 2}, i32.data(), 24);
  check_raw("u16", DType::DTYPE_U16, {5}, u16.data(), 10);
  check_raw("u32", DType::DTYPE_U32, {1}, u32.data(), 4);
  check_raw("scalar", DType::DTYPE_F32, {}, &scalar, 4);
  check_raw("empty", DType::DTYPE_F32, {0, 5}, nullptr, 0);
  check_raw("empty1d", DType::DTYPE_I32, {0}, nullptr, 0);

  // Converting reads.
  EXPECT_EQ(r.read_as<double>("f64", {2, 3}), f64);
  EXPECT_EQ(r.read_as<float>("f32"), f32);
  EXPECT_EQ(r.read_as<float>("f16"), (std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24)}));
  EXPECT_EQ(r.read_as<double>("bf16"), (std::vector<double>{1.0, -1.0, 3.140625, 0.0}));
  EXPECT_EQ(r.read_as<int64_t>("i64"), i64);
  EXPECT_EQ(r.read_as<int32_t>("i32", {3, 1, 2}), i32);
  EXPECT_EQ(r.read_as<double>("i32"), (std::vector<double>{1, -2, 3, -4, 5, -6}));
  EXPECT_EQ(r.read_as<int32_t>("u16"), (std::vector<int32_t>{0, 1, 65535, 4, 5}));
  EXPECT_EQ(r.read_as<int64_t>("u32"), (std::vector<int64_t>{0xdeadbeefll}));
  EXPECT_EQ(r.read_as<float>("scalar", {}), (std::vector<float>{42.0f}));
  EXPECT_TRUE(r.read_as<float>("empty", {0, 5}).empty());
  EXPECT_EQ(r.read_as<float>("f64")[0], 1.5f);
}

TEST(Safetensors, HalfConversionEdgeCases) {
  TempDir dir;
  const std::string path = dir.file("half.safetensors");
  // 65504 (max), -0, +inf, NaN, smallest normal 2^-14, largest subnormal.
  std::vector<uint16_t> h = {0x7BFF, 0x8000, 0x7C00, 0x7E00, 0x0400, 0x03FF};
  SafetensorsWriter w;
  w.add("h", DType::DTYPE_F16, {6}, h.data());
  w.write(path);
  SafetensorsReader r(path);
  auto v = r.read_as<double>("h");
  EXPECT_EQ(v[0], 65504.0);
  EXPECT_EQ(v[1], 0.0);
  EXPECT_TRUE(std::signbit(v[1]));
  EXPECT_TRUE(std::isinf(v[2]) && v[2] > 0);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[4], std::ldexp(1.0, -14));
  EXPECT_EQ(v[5], std::ldexp(1023.0, -24));
}

TEST(Safetensors, MetadataRoundTrip) {
  TempDir dir;
  const std::string path = dir.file("meta.safetensors");
  float x = 1.0f;
  SafetensorsWriter w;
  w.add("x", DType::DTYPE_F32, {1}, &x);
  w.set_metadata("format", "pt");
  w.set_metadata("lr", "0.001");
  w.set_metadata("empty", "");
  w.set_metadata("quote\"and\\slash", "line\nbreak \xc3\xa9");
  w.set_metadata("lr", "0.002");  // overwrites
  w.write(path);
  SafetensorsReader r(path);
  std::map<std::string, std::string> want = {{"format", "pt"},
                                             {"lr", "0.002"},
                                             {"empty", ""},
                                             {"quote\"and\\slash", "line\nbreak \xc3\xa9"}};
  EXPECT_EQ(r.metadata(), want);
  EXPECT_EQ(r.metadata("lr"), "0.002");
  std::string msg = one_line_error([&] { (void)r.metadata("missing_key"); });
  EXPECT_TRUE(contains(msg, "missing_key")) << msg;
  EXPECT_TRUE(contains(msg, path)) << msg;
}

// A rank's pieces of a sharded tensor, read without a copy of the whole: every range equals the
// same elements of read_into's copy; the checks are read_into's; a range past the end throws.
TEST(Safetensors, ReadRangeIntoReadsOnlyTheRange) {
  TempDir dir;
  const std::string path = dir.file("range.safetensors");
  std::vector<int32_t> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = int32_t(i * 37 % 1001);
  float pad = 2.0f;
  SafetensorsWriter w;
  w.add("pad", DType::DTYPE_F32, {1}, &pad);  // the tensor does not start the data
  w.add("v", DType::DTYPE_I32, {1000}, v.data());
  w.write(path);
  SafetensorsReader r(path);
  for (auto [first, count] :
       {std::pair<size_t, size_t>{0, 1000}, {0, 1}, {999, 1}, {123, 456}, {1000, 0}, {500, 0}}) {
    std::vector<int32_t> got(count + 1, -7);
    r.read_range_into("v", DType::DTYPE_I32, {1000}, first, count, got.data());
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], v[first + i]) << first << "+" << i;
    EXPECT_EQ(got[count], -7) << "wrote past the range";
  }
  int32_t one = 0;
  std::string msg =
      one_line_error([&] { r.read_range_into("v", DType::DTYPE_I32, {1000}, 999, 2, &one); });
  EXPECT_TRUE(contains(msg, "[999, 1001) asked of 1000")) << msg;
  msg = one_line_error([&] { r.read_range_into("v", DType::DTYPE_F32, {1000}, 0, 1, &one); });
  EXPECT_TRUE(contains(msg, "has dtype I32, expected F32")) << msg;
  msg = one_line_error([&] { r.read_range_into("v", DType::DTYPE_I32, {999}, 0, 1, &one); });
  EXPECT_TRUE(contains(msg, "has shape")) << msg;
}

TEST(Safetensors, OnlyMetadataNoTensors) {
  TempDir dir;
  const std::string path = dir.file("none.safetensors");
  SafetensorsWriter w;
  w.set_metadata("k", "v");
  w.write(path);
  SafetensorsReader r(path);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.metadata("k"), "v");
}

TEST(Safetensors, MoveKeepsMapping) {
  TempDir dir;
  const std::string path = dir.file("mv.safetensors");
  std::vector<float> v = {1, 2, 3};
  SafetensorsWriter w;
  w.add("v", DType::DTYPE_F32, {3}, v.data());
  w.write(path);
  SafetensorsReader a(path);
  SafetensorsReader b(std::move(a));
  EXPECT_EQ(b.read_as<float>("v"), v);
  SafetensorsReader c(path);
  c = std::move(b);
  EXPECT_EQ(c.read_as<float>("v"), v);
}

// ---- byte layout / compatibility -------------------------------------------------------

// Our writer's output, byte for byte, for the layout the reference implementation
// (huggingface safetensors, serde_json) produces: compact JSON, __metadata__ first, then the
// entries with keys dtype/shape/data_offsets, header padded with spaces to a multiple of 8.
TEST(Safetensors, WriterByteLayout) {
  TempDir dir;
  const std::string path = dir.file("layout.safetensors");
  std::vector<float> a = {1.0f, 2.0f};
  std::vector<int32_t> b = {-1};
  SafetensorsWriter w;
  w.add("a", DType::DTYPE_F32, {2}, a.data());
  w.add("b", DType::DTYPE_I32, {}, b.data());
  w.set_metadata("format", "pt");
  w.write(path);

  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I32","shape":[],"data_offsets":[8,12]}})";
  ASSERT_EQ(header.size(), 138u);
  header += "      ";  // 138 -> 144
  Bytes expect = build_file(header, concat({as_bytes(a), as_bytes(b)}));
  EXPECT_EQ(read_bytes(path), expect);
  // The length prefix is little-endian: 144 = 0x90.
  Bytes got = read_bytes(path);
  ASSERT_GE(got.size(), 8u);
  EXPECT_EQ(got[0], 0x90);
  for (int i = 1; i < 8; ++i) EXPECT_EQ(got[i], 0);

  // Without metadata there is no __metadata__ key at all.
  SafetensorsWriter w2;
  w2.add("a", DType::DTYPE_F32, {2}, a.data());
  w2.write(path);
  std::string h2 = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  h2.append((8 - h2.size() % 8) % 8, ' ');
  EXPECT_EQ(read_bytes(path), build_file(h2, as_bytes(a)));
}

// A streamed tensor (add_streamed: bytes produced while write() runs, in pieces) gives the same
// file, checksums included, as the same bytes borrowed; a filler that gives too few or too many
// bytes is an error naming the tensor, and nothing is left at the path.
TEST(Safetensors, StreamedTensorsWriteTheSameFile) {
  TempDir dir;
  std::vector<float> a(70001);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i) * 0.25f - 7.0f;
  std::vector<int32_t> b = {3, -4, 5};
  auto writer = [&](bool streamed, size_t give) {
    SafetensorsWriter w;
    w.set_metadata("format", "test");
    w.add_checksums();
    w.add("b", DType::DTYPE_I32, {3}, b.data());
    if (!streamed) {
      w.add("a", DType::DTYPE_F32, {int64_t(a.size())}, a.data());
      return w;
    }
    w.add_streamed("a", DType::DTYPE_F32, {int64_t(a.size())},
                   [&a, give](const SafetensorsWriter::Sink& sink) {
                     const auto* p = reinterpret_cast<const uint8_t*>(a.data());
                     for (size_t at = 0; at < give; at += 12345)
                       sink(p + at, std::min<size_t>(12345, give - at));
                   });
    return w;
  };
  const size_t whole = a.size() * sizeof(float);
  writer(false, 0).write(dir.file("borrowed.safetensors"));
  writer(true, whole).write(dir.file("streamed.safetensors"));
  EXPECT_EQ(read_bytes(dir.file("streamed.safetensors")),
            read_bytes(dir.file("borrowed.safetensors")));
  SafetensorsReader r(dir.file("streamed.safetensors"));
  r.verify_checksums();
  EXPECT_EQ(r.read_as<float>("a", {int64_t(a.size())}), a);

  for (size_t give : {whole - 4, whole + 4}) {
    const std::string path = dir.file("short.safetensors");
    expect_error([&] { writer(true, give).write(path); }, {"short.safetensors", "'a'"});
    EXPECT_FALSE(fs::exists(path)) << give;
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 2);
  }
}

// A file laid out as another producer may write it: keys in a different order inside each
// entry, header order differing from data order, no padding (so data are unaligned),
// whitespace in the JSON.
TEST(Safetensors, ReadsForeignLayout) {
  TempDir dir;
  const std::string path = dir.file("foreign.safetensors");
  std::vector<float> a = {0.5f, -4.0f};
  std::vector<int32_t> b = {123456};
  std::vector<double> c = {2.0};
  const std::string header =
      "{ \"b\": {\"data_offsets\": [8, 12], \"dtype\": \"I32\", \"shape\": []},\n"
      "  \"c\": {\"shape\": [1, 1], \"data_offsets\": [12, 20], \"dtype\": \"F64\"},\n"
      "  \"__metadata__\": {\"format\": \"pt\"},\n"
      "  \"a\": {\"shape\": [2], \"dtype\": \"F32\", \"data_offsets\": [0, 8]}}";
  ASSERT_NE(header.size() % 8, 0u);
  write_bytes(path, build_file(header, concat({as_bytes(a), as_bytes(b), as_bytes(c)})));
  SafetensorsReader r(path);
  EXPECT_EQ(r.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(r.read_as<float>("a", {2}), a);
  EXPECT_EQ(r.read_as<int32_t>("b", {}), b);
  EXPECT_EQ(r.read_as<double>("c", {1, 1}), c);
  EXPECT_EQ(r.metadata("format"), "pt");
}

// ---- lookups and typed reads -------------------------------------------------------------

TEST(Safetensors, LookupAndTypedReadErrors) {
  TempDir dir;
  const std::string path = dir.file("look.safetensors");
  std::vector<float> x(6, 1.0f);
  std::vector<int64_t> big = {int64_t{1} << 40};
  std::vector<uint64_t> huge = {~uint64_t{0}};
  SafetensorsWriter w;
  w.add("x", DType::DTYPE_F32, {2, 3}, x.data());
  w.add("big", DType::DTYPE_I64, {1}, big.data());
  w.add("huge", DType::DTYPE_U64, {1}, huge.data());
  w.write(path);
  SafetensorsReader r(path);

  EXPECT_FALSE(r.contains("nope"));
  std::string msg = one_line_error([&] { (void)r.info("nope"); });
  EXPECT_TRUE(contains(msg, "'nope'") && contains(msg, path)) << msg;
  msg = one_line_error([&] { (void)r.data("nope"); });
  EXPECT_TRUE(contains(msg, "'nope'")) << msg;

  std::vector<float> dst(6);
  msg = one_line_error([&] { r.read_into("x", DType::DTYPE_F32, {3, 2}, dst.data()); });
  EXPECT_EQ(msg, "tensor 'x' in '" + path + "' has shape [2, 3], expected [3, 2]");
  msg = one_line_error([&] { r.read_into("x", DType::DTYPE_F64, {2, 3}, dst.data()); });
  EXPECT_EQ(msg, "tensor 'x' in '" + path + "' has dtype F32, expected F64");
  msg = one_line_error([&] { (void)r.read_as<float>("x", {6}); });
  EXPECT_EQ(msg, "tensor 'x' in '" + path + "' has shape [2, 3], expected [6]");
  msg = one_line_error([&] { (void)r.read_as<int32_t>("x"); });
  EXPECT_TRUE(contains(msg, "'x'") && contains(msg, "F32") && contains(msg, "int32")) << msg;
  msg = one_line_error([&] { (void)r.read_as<int32_t>("big"); });
  EXPECT_TRUE(contains(msg, "'big'") && contains(msg, "does not fit int32")) << msg;
  EXPECT_EQ(r.read_as<int64_t>("big"), big);
  msg = one_line_error([&] { (void)r.read_as<int64_t>("huge"); });
  EXPECT_TRUE(contains(msg, "'huge'") && contains(msg, "18446744073709551615")) << msg;
  EXPECT_EQ(r.read_as<double>("huge")[0], 18446744073709551615.0);
}

// ---- golden GPT-2 asset ------------------------------------------------------------------

TEST(Safetensors, Gpt2GoldenAssetLoads) {
  const char* assets = std::getenv("GOSSAMER_TEST_ASSETS");
  ASSERT_NE(assets, nullptr) << "GOSSAMER_TEST_ASSETS is not set (ctest sets it to tests/assets)";
  const std::string path = std::string(assets) + "/gpt2_golden.safetensors";
  SafetensorsReader r(path);

  const int64_t L = 2, C = 64, V = 997, Vp = 1024, maxT = 32, B = 3, T = 13;
  for (const char* key :
       {"n_layer", "n_head", "d_model", "vocab_size", "padded_vocab", "max_seq_len", "B", "T", "lr",
        "beta1", "beta2", "eps", "weight_decay", "grad_clip", "steps", "torch_version", "script"}) {
    EXPECT_TRUE(r.metadata().count(key)) << "metadata key " << key;
  }
  EXPECT_EQ(r.metadata("n_layer"), "2");
  EXPECT_EQ(r.metadata("d_model"), "64");
  EXPECT_EQ(r.metadata("vocab_size"), "997");
  EXPECT_EQ(r.metadata("steps"), "10");

  EXPECT_EQ(r.info("tokens").dtype, DType::DTYPE_I32);
  EXPECT_EQ(r.info("tokens").shape, (Shape{B, T}));
  EXPECT_EQ(r.info("targets").dtype, DType::DTYPE_I32);
  EXPECT_EQ(r.info("targets").shape, (Shape{B, T}));
  EXPECT_EQ(r.info("logits").dtype, DType::DTYPE_F64);
  EXPECT_EQ(r.info("logits").shape, (Shape{B, T, V}));
  EXPECT_EQ(r.info("loss").shape, Shape{});
  EXPECT_EQ(r.info("grad_norms").shape, (Shape{10}));
  EXPECT_EQ(r.info("losses").shape, (Shape{10}));

  // Every parameter has a gradient of the same shape, all F64.
  std::map<std::string, Shape> params;
  params["wte"] = {Vp, C};
  params["wpe"] = {maxT, C};
  params["ln_f.weight"] = {C};
  params["ln_f.bias"] = {C};
  for (int l = 0; l < L; ++l) {
    std::string b = "blocks." + std::to_string(l) + ".";
    params[b + "ln1.weight"] = {C};
    params[b + "ln1.bias"] = {C};
    params[b + "attn.qkv.weight"] = {3 * C, C};
    params[b + "attn.qkv.bias"] = {3 * C};
    params[b + "attn.proj.weight"] = {C, C};
    params[b + "attn.proj.bias"] = {C};
    params[b + "ln2.weight"] = {C};
    params[b + "ln2.bias"] = {C};
    params[b + "mlp.fc.weight"] = {4 * C, C};
    params[b + "mlp.fc.bias"] = {4 * C};
    params[b + "mlp.proj.weight"] = {C, 4 * C};
    params[b + "mlp.proj.bias"] = {C};
  }
  size_t n_param = 0, n_grad = 0;
  for (const std::string& name : r.names()) {
    n_param += name.rfind("param.", 0) == 0;
    n_grad += name.rfind("grad.", 0) == 0;
  }
  EXPECT_EQ(n_param, params.size());
  EXPECT_EQ(n_grad, params.size());
  for (const auto& [name, shape] : params) {
    for (std::string prefix : {"param.", "grad."}) {
      SCOPED_TRACE(prefix + name);
      ASSERT_TRUE(r.contains(prefix + name));
      EXPECT_EQ(r.info(prefix + name).dtype, DType::DTYPE_F64);
      EXPECT_EQ(r.info(prefix + name).shape, shape);
    }
  }
  // File-format sanity only (the model test lives elsewhere): tokens in range, the padded wte
  // rows are zero in the parameters.
  for (int32_t t : r.read_as<int32_t>("tokens")) EXPECT_TRUE(t >= 0 && t < V);
  for (int32_t t : r.read_as<int32_t>("targets")) EXPECT_TRUE(t >= 0 && t < V);
  std::vector<double> wte = r.read_as<double>("param.wte", {Vp, C});
  for (int64_t i = V * C; i < Vp * C; ++i) ASSERT_EQ(wte[i], 0.0) << "padded wte element " << i;
}

}  // namespace
}  // namespace gossamer::io
