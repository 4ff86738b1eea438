// Damage is never loaded silently: checksum64 (io/checksum.h) changes with any flipped bit and
// does not depend on threads or alignment; checkpoint safetensors files carry a checksum per
// tensor and a flipped byte is an error naming the file and the tensor; weights that are not
// finite are refused naming the tensor; files written before checksums still load.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "io/checksum.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "optim/registry.h"
#include "run/checkpoint.h"
#include "run/run_config.h"
#include "test_util.h"

namespace {

using namespace gossamer;
using gossamer::testing::expect_error;
using gossamer::testing::TempDir;

std::vector<unsigned char> pattern(size_t n) {
  std::vector<unsigned char> v(n);
  uint64_t x = 88172645463325252ull;
  for (auto& b : v) x ^= x << 13, x ^= x >> 7, x ^= x << 17, b = static_cast<unsigned char>(x);
  return v;
}

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(std::streamoff(offset));
  char c = 0;
  f.read(&c, 1);
  c = char(c ^ 0x10);
  f.seekp(std::streamoff(offset));
  f.write(&c, 1);
}

// Values of the one-call implementation before the streaming one existed (it hashed the chunks
// of the whole buffer in one loop): files written then must still verify, and bytes that arrive
// in pieces of any sizes must give the same value.
TEST(Checksum, StreamedInPiecesEqualsTheStoredValues) {
  const std::pair<size_t, uint64_t> golden[] = {
      {0, 0xef46db3751d8e999ull},       {1, 0xe4d2c493399f2418ull},
      {65535, 0xa53d7432ded17077ull},   {65536, 0xfc0080b421927121ull},
      {65537, 0x5c1a449cbc7df394ull},   {200000, 0xeae5ce68428991b4ull},
      {1000003, 0x951ddcbd4d29bde7ull},
  };
  uint64_t x = 12345;
  for (const auto& [n, value] : golden) {
    const std::vector<unsigned char> v = pattern(n);
    EXPECT_EQ(io::checksum64(v.data(), n), value) << n;
    for (size_t piece : {size_t(1), size_t(7), size_t(4096), size_t(65536), size_t(70001), n}) {
      io::Checksum64Stream s;
      for (size_t at = 0; at < n;) {  // pieces of up to `piece` bytes, sizes varying
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const size_t take = std::min(n - at, 1 + size_t(x % std::max<size_t>(piece, 1)));
        s.add(v.data() + at, take);
        at += take;
      }
      EXPECT_EQ(s.value(), value) << n << " in pieces of up to " << piece;
    }
  }
}

TEST(Checksum, EveryFlippedBitChangesItAndThreadsDoNot) {
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(31), size_t(33),
                   size_t(65535), size_t(65536), size_t(65537), size_t(200000)}) {
    std::vector<unsigned char> v = pattern(n + 1);
    const uint64_t base = io::checksum64(v.data(), n);
    EXPECT_EQ(io::checksum64(v.data() + 1, 0) == base, n == 0);
    // Alignment: the same bytes at another address.
    std::vector<unsigned char> shifted(n + 1);
    std::memcpy(shifted.data() + 1, v.data(), n);
    EXPECT_EQ(io::checksum64(shifted.data() + 1, n), base) << n;
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    EXPECT_EQ(io::checksum64(v.data(), n), base) << n;
    omp_set_num_threads(saved);
    // Flipped bits, all of them for small buffers, a stride for large ones.
    const size_t stride = n < 4096 ? 1 : 997;
    for (size_t i = 0; i < n; i += stride) {
      for (int bit : {0, 7}) {
        v[i] ^= static_cast<unsigned char>(1u << bit);
        ASSERT_NE(io::checksum64(v.data(), n), base) << n << " byte " << i << " bit " << bit;
        v[i] ^= static_cast<unsigned char>(1u << bit);
      }
    }
  }
  // Equal chunks at different places, and zeros of different lengths, differ.
  std::vector<unsigned char> zeros(3 << 16, 0);
  EXPECT_NE(io::checksum64(zeros.data(), 1 << 16), io::checksum64(zeros.data(), 2 << 16));
  EXPECT_EQ(io::checksum_hex(0x1fULL), "000000000000001f");
}

TEST(Checksum, SafetensorsFilesNameTheDamagedTensor) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  std::vector<float> a(1000, 1.5f), b(300, -2.0f);
  io::SafetensorsWriter w;
  w.add("a", io::DType::DTYPE_F32, {1000}, a.data());
  w.add("b", io::DType::DTYPE_F32, {300}, b.data());
  w.add_checksums();
  w.write(path);
  EXPECT_EQ(io::SafetensorsReader(path).verify_checksums(), 2u);
  const io::SafetensorsReader r(path);
  const uint64_t data_start = std::filesystem::file_size(path) - (a.size() + b.size()) * 4;
  flip_byte(path, data_start + r.info("b").begin + 5);
  expect_error([&] { io::SafetensorsReader(path).verify_checksums(); },
               {path, "tensor 'b' does not match its checksum", "damaged"});
  // A file without checksums (all files before them, and Hugging Face exports): nothing to check.
  io::SafetensorsWriter plain;
  plain.add("a", io::DType::DTYPE_F32, {1000}, a.data());
  plain.write(dir.file("plain.safetensors"));
  EXPECT_EQ(io::SafetensorsReader(dir.file("plain.safetensors")).verify_checksums(), 0u);
}

// A damaged header must not switch a tensor's check off: a file that holds checksums and has a
// tensor without one is refused, so damage to that tensor's bytes cannot load (found by
// test_fuzz_safetensors.cpp: a checksum entry renamed by the damage, then a flipped data byte).
TEST(Checksum, ATensorWhoseChecksumEntryIsGoneIsRefused) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  std::vector<float> a(100, 1.5f), b(30, -2.0f);
  io::SafetensorsWriter w;
  w.add("a", io::DType::DTYPE_F32, {100}, a.data());
  w.add("b", io::DType::DTYPE_F32, {30}, b.data());
  w.add_checksums();
  w.write(path);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t key = bytes.find("\"checksum.b\"");
  ASSERT_NE(key, std::string::npos);
  bytes[key + 9] = '_';  // "checksum_b": no longer a checksum entry, same header length
  const uint64_t data_start = bytes.size() - (a.size() + b.size()) * 4;
  bytes[data_start + 100 * 4 + 5] ^= 0x10;  // and a damaged byte in b
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  expect_error([&] { io::SafetensorsReader(path).verify_checksums(); },
               {path, "tensor 'b' has no checksum", "header is damaged"});
}

// A checkpoint with one flipped byte in its weights, and one whose weights hold a NaN.
TEST(CheckpointIntegrity, DamagedOrNonFiniteWeightsAreRefusedNamingTheTensor) {
  TempDir dir;
  run::RunConfig rc;
  rc.model.n_layer = 1, rc.model.n_head = 2, rc.model.d_model = 16, rc.model.vocab_size = 64;
  rc.model.max_seq_len = 8;
  auto m = model::make_model(rc.model, 1, 8, kernels::cpu_ops());
  m->init_weights(3);
  auto opt = optim::make_optimizer(rc.optimizer, m->layout(), kernels::cpu_ops());
  const std::string ckpt = run::save_checkpoint(dir.file("run"), *m, *opt,
                                                run::initial_trainer_state(1), run::to_json(rc));
  auto loaded = model::make_model(rc.model, 1, 8, kernels::cpu_ops());
  run::load_model_weights(ckpt, *loaded);
  EXPECT_EQ(
      std::memcmp(loaded->params().data(), m->params().data(), m->params().size() * sizeof(float)),
      0);
  run::verify_checkpoint(ckpt);

  const std::string file = ckpt + "/model.safetensors";
  const io::SafetensorsReader r(file);
  const uint64_t data_start = std::filesystem::file_size(file) - m->params().size() * 4;
  flip_byte(file, data_start + r.info("wte").begin + 40);
  expect_error([&] { run::load_model_weights(ckpt, *loaded); },
               {file, "tensor 'wte' does not match its checksum"});
  expect_error([&] { run::verify_checkpoint(ckpt); }, {"'wte'", "checksum"});

  m->params()[m->layout().find("ln_f.bias").offset + 3] = std::nanf("");
  const std::string nan_ckpt = run::save_checkpoint(
      dir.file("nan"), *m, *opt, run::initial_trainer_state(1), run::to_json(rc));
  expect_error([&] { run::load_model_weights(nan_ckpt, *loaded); },
               {"model.safetensors", "tensor ln_f.bias holds a non-finite value", "element 3"});
}

}  // namespace
