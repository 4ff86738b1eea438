// The zip codec on CUDA (kernels/cuda/zip_chunks.cu through comm::zip::DeviceZipCodec) against
// the CPU codec (codec.h): the messages it writes equal the CPU codec's byte for byte (every
// bf16 pattern, Gaussian bf16 with sparse, zero and NaN stretches, fp32, one element, none,
// chunks of 333 to 16,384 and 4M elements over many blocks); it decodes the CPU codec's messages
// to the same elements and accumulates them to the same fp32 sums, assigned and added (NaNs may
// differ in payload when added: a GPU's add makes them canonical); damaged messages (one and four
// exponent streams, bf16 and fp32) get the CPU codec's verdict, the bad chunk named. Guard bands of
// sentinel bytes after every output must stay untouched. Without a GPU every test is SKIPPED, never
// passed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "comm/zip/codec.h"
#include "comm/zip/device_codec.h"
#include "core/buffer.h"
#include "kernels/cuda/zip_chunks.cuh"
#include "skip_without_gpu.h"
#include "zip_test_data.h"

namespace gossamer::comm::zip {
namespace {

constexpr size_t kGuard = 256;  // sentinel bytes after each output
constexpr uint8_t kSentinel = 0xc3;

const MemoryOps& gpu() {
  return *kernels::cuda::kZipChunks.memory;
}

// A GPU buffer holding `host`, then kGuard sentinel bytes (and `room` more before them).
Buffer<uint8_t> staged(const std::vector<uint8_t>& host, size_t room = 0) {
  std::vector<uint8_t> bytes = host;
  bytes.resize(host.size() + room + kGuard, kSentinel);
  Buffer<uint8_t> b(bytes.size(), gpu());
  b.upload(bytes.data(), bytes.size());
  return b;
}

std::vector<uint8_t> read(const Buffer<uint8_t>& b) {
  std::vector<uint8_t> host(b.size());
  b.download(host.data(), host.size());
  return host;
}

// The sentinel bytes from `from` to the end of b: none may have changed.
size_t damaged_guard(const std::vector<uint8_t>& all, size_t from) {
  size_t wrong = 0;
  for (size_t i = from; i < all.size(); ++i) wrong += all[i] != kSentinel;
  return wrong;
}

std::vector<uint8_t> bytes_of(const void* p, size_t n) {
  std::vector<uint8_t> v(n);
  if (n) std::memcpy(v.data(), p, n);
  return v;
}

// fp32 sums equal bit for bit, or both NaN: a GPU's add returns its one canonical NaN where the
// CPU's keeps the input's payload (device_codec.h).
size_t different_sums(const std::vector<uint8_t>& got, const std::vector<float>& want) {
  size_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    float g;
    std::memcpy(&g, got.data() + 4 * i, 4);
    uint32_t gb, wb;
    std::memcpy(&gb, &g, 4);
    std::memcpy(&wb, &want[i], 4);
    wrong += gb != wb && !(std::isnan(g) && std::isnan(want[i]));
  }
  return wrong;
}

std::vector<uint8_t> cpu_message(const std::vector<uint8_t>& raw, size_t n, DType dtype,
                                 const CodecOptions& options) {
  std::vector<uint8_t> out(max_compressed_bytes(n, dtype, options.chunk_elems));
  out.resize(compress(raw.data(), n, dtype, out, options));
  return out;
}

struct Case {
  std::string name;
  DType dtype;
  std::vector<uint8_t> raw;
  CodecOptions options;
  size_t n() const { return raw.size() / dtype_size(dtype); }
};

std::vector<Case> cases() {
  std::vector<Case> out;
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  out.push_back(
      {"every bf16 pattern", DType::BF16, bytes_of(all.data(), 131072), {.chunk_elems = 333}});
  std::vector<uint16_t> b = gaussian_bf16(70000, 0.03f, 31);
  for (size_t i = 20000; i < 40000; ++i) b[i] = i % 7 ? 0 : b[i];
  for (size_t i = 45000; i < 50000; ++i) b[i] = 0;
  for (size_t i = 0; i < b.size(); i += 997) b[i] = 0xff81;
  out.push_back({"bf16 mixed", DType::BF16, bytes_of(b.data(), b.size() * 2), {}});
  out.push_back({"bf16 mixed, no checksum",
                 DType::BF16,
                 bytes_of(b.data(), b.size() * 2),
                 {.chunk_elems = 4096, .checksum = false}});
  out.push_back({"bf16 one element", DType::BF16, bytes_of(b.data(), 2), {}});
  out.push_back({"bf16 none", DType::BF16, {}, {}});
  const std::vector<uint32_t> f = gaussian_f32(33333, 2.0f, 37);
  out.push_back({"fp32", DType::F32, bytes_of(f.data(), f.size() * 4), {.chunk_elems = 1000}});
  const std::vector<uint16_t> big = gaussian_bf16(size_t{1} << 22, 0.01f, 39);
  out.push_back({"bf16 4M", DType::BF16, bytes_of(big.data(), big.size() * 2), {}});
  return out;
}

TEST(CudaZipCodec, WritesTheCpuCodecsMessages) {
  SKIP_WITHOUT_GPU();
  DeviceZipCodec codec(kernels::cuda::kZipChunks);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<uint8_t> want = cpu_message(c.raw, c.n(), c.dtype, c.options);
    const size_t cap = max_compressed_bytes(c.n(), c.dtype, c.options.chunk_elems);
    Buffer<uint8_t> in = staged(c.raw), msg = staged({}, cap);
    const size_t bytes = codec.compress(in.data(), c.n(), c.dtype, msg.data(), cap, c.options);
    const std::vector<uint8_t> got = read(msg);
    ASSERT_EQ(bytes, want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0);
    EXPECT_EQ(damaged_guard(got, bytes), 0u);  // nothing past the message, guard included
    EXPECT_EQ(damaged_guard(read(in), c.raw.size()), 0u);
  }
}

TEST(CudaZipCodec, DecodesAndAccumulatesTheCpuCodecsMessages) {
  SKIP_WITHOUT_GPU();
  DeviceZipCodec codec(kernels::cuda::kZipChunks);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<uint8_t> msg = cpu_message(c.raw, c.n(), c.dtype, c.options);
    Buffer<uint8_t> m = staged(msg), out = staged({}, c.raw.size());
    codec.decompress(m.data(), msg.size(), out.data(), c.n(), c.dtype);
    const std::vector<uint8_t> got = read(out);
    EXPECT_EQ(std::memcmp(got.data(), c.raw.data(), c.raw.size()), 0);
    EXPECT_EQ(damaged_guard(got, c.raw.size()), 0u);
    std::vector<float> acc0(c.n());
    for (size_t i = 0; i < c.n(); ++i) acc0[i] = i % 3 ? -0.0f : float(i % 11) - 5.0f;
    for (bool assign : {true, false}) {
      std::vector<float> want = acc0;
      decompress_accumulate(msg, want.data(), c.n(), c.dtype, assign);
      Buffer<uint8_t> acc = staged(bytes_of(acc0.data(), acc0.size() * 4));
      codec.decompress_accumulate(m.data(), msg.size(), reinterpret_cast<float*>(acc.data()), c.n(),
                                  c.dtype, assign);
      const std::vector<uint8_t> sums = read(acc);
      if (assign)  // a copy of the bits
        EXPECT_EQ(std::memcmp(sums.data(), want.data(), want.size() * 4), 0);
      else
        EXPECT_EQ(different_sums(sums, want), 0u);
      EXPECT_EQ(damaged_guard(sums, want.size() * 4), 0u);
    }
  }
}

// The messages damaged: bf16 chunks of 500 in every mode (one exponent stream each), bf16 chunks
// of 8,192 with four streams and escapes, fp32 chunks of 1,000, sparse with NaN escapes.
struct Damaged {
  DType dtype;
  std::vector<uint8_t> raw;
  size_t chunk_elems;
};

std::vector<Damaged> damage_cases() {
  std::vector<uint16_t> v = gaussian_bf16(5000, 0.05f, 17);
  for (size_t i = 1000; i < 2500; ++i) v[i] = i % 37 ? 0 : v[i];
  for (size_t i = 3000; i < 3500; ++i) v[i] = 0;
  for (size_t i = 4000; i < 4200; ++i) v[i] = uint16_t(i * 2654435761u);
  for (size_t i = 0; i < v.size(); i += 53) v[i] = 0x7f80;
  std::vector<uint16_t> w = gaussian_bf16(2 * 8192 + 3001, 0.05f, 23);
  for (size_t i = 0; i < w.size(); i += 101) w[i] = 0x7f80;
  std::vector<uint32_t> f = gaussian_f32(5000, 1e-3f, 31);
  for (size_t i = 0; i < f.size(); ++i) f[i] = i % 3 ? 0 : (i % 41 ? f[i] : 0x7fc00001u);
  return {{DType::BF16, bytes_of(v.data(), v.size() * 2), 500},
          {DType::BF16, bytes_of(w.data(), w.size() * 2), 8192},
          {DType::F32, bytes_of(f.data(), f.size() * 4), 1000}};
}

// Damaged messages per case: 300, or GOSSAMER_ZIP_DAMAGE_TRIALS (scripts/gpu-check.sh runs this
// test again under compute-sanitizer's memcheck with fewer, to find out-of-bounds reads).
int damage_trials() {
  const char* env = std::getenv("GOSSAMER_ZIP_DAMAGE_TRIALS");
  return env && std::atoi(env) > 0 ? std::atoi(env) : 300;
}

TEST(CudaZipCodec, GivesTheCpuCodecsVerdictOnDamage) {
  SKIP_WITHOUT_GPU();
  DeviceZipCodec codec(kernels::cuda::kZipChunks);
  std::mt19937 rng(2026);
  for (const Damaged& c : damage_cases()) {
    const size_t n = c.raw.size() / dtype_size(c.dtype);
    for (bool checksum : {true, false}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(c.dtype) << " chunks of " << c.chunk_elems
                                        << ", checksum " << checksum);
      const std::vector<uint8_t> msg =
          cpu_message(c.raw, n, c.dtype, {.chunk_elems = c.chunk_elems, .checksum = checksum});
      std::vector<uint8_t> cpu_out(c.raw.size());
      Buffer<uint8_t> out = staged({}, c.raw.size());
      int rejected = 0;
      for (int t = 0; t < damage_trials(); ++t) {
        const std::vector<uint8_t> d = damage(msg, rng);
        std::string cpu_error, gpu_error;
        try {
          decompress(d, cpu_out.data(), n, c.dtype, 1);
        } catch (const CorruptInput& e) {
          cpu_error = e.what();
        }
        Buffer<uint8_t> m = staged(d);
        try {
          codec.decompress(m.data(), d.size(), out.data(), n, c.dtype);
        } catch (const CorruptInput& e) {
          gpu_error = e.what();
        }
        ASSERT_EQ(gpu_error.empty(), cpu_error.empty())
            << "trial " << t << ": CPU '" << cpu_error << "', GPU '" << gpu_error << "'";
        rejected += !gpu_error.empty();
        const std::vector<uint8_t> got = read(out);
        if (gpu_error.empty()) {
          EXPECT_EQ(std::memcmp(got.data(), cpu_out.data(), c.raw.size()), 0);
        }
        EXPECT_EQ(damaged_guard(got, c.raw.size()), 0u);
        // The chunk named is the CPU codec's: both name the first bad chunk (the CPU codec on one
        // thread meets them in order, as the driver's scan of the statuses does).
        if (!cpu_error.empty() && cpu_error.rfind("zip: chunk ", 0) == 0) {
          EXPECT_EQ(gpu_error.substr(0, gpu_error.find(':', 5)),
                    cpu_error.substr(0, cpu_error.find(':', 5)));
        }
      }
      EXPECT_GT(rejected, damage_trials() / 5);
    }
  }
}

}  // namespace
}  // namespace gossamer::comm::zip
