// Implementation of `gossamer bench codec` (codec_bench.h): builds each data set (synthetic, or
// a checkpoint's parameters, optimizer state and one gradient), then per data set: the exponent
// entropy, one checked round trip per codec and thread count (output pre-filled with a pattern,
// compared bit for bit), and the median time of --iters runs after --warmup of the zip encoder
// and decoder (1 thread and --threads), zstd level 1 (one reused context, single thread: the
// same bytes as ZSTD_compress) and LZ4_compress_default / LZ4_decompress_safe. Rows are printed
// as each data set finishes.
#include "bench/codec_bench.h"

#include <lz4.h>
#include <omp.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/zip/codec.h"
#include "comm/zip/crc32c.h"
#include "core/bf16.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/log.h"
#include "core/median.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/loader.h"
#include "io/safetensors.h"
#include "run/checkpoint.h"
#include "run/model_source.h"

namespace gossamer::bench {

using comm::DType;

namespace {

static_assert(CodecBenchOptions{}.chunk_elems == comm::zip::kDefaultChunkElems,
              "bench codec: the default chunk size is the codec's");

// One array to compress: bf16 or fp32 bit patterns.
struct DataSet {
  std::string source;  // "synthetic", or params/optimizer/gradient and the checkpoint's step
  std::string name;    // what the array holds
  DType dtype = DType::F32;
  size_t n = 0;
  HostBuffer<uint8_t> bytes;

  size_t size() const { return n * comm::dtype_size(dtype); }
};

DataSet make_set(std::string source, std::string name, DType dtype, size_t n) {
  DataSet d{std::move(source), std::move(name), dtype, n, {}};
  d.bytes = HostBuffer<uint8_t>(std::max<size_t>(d.size(), 1));
  return d;
}

// bf16 copy of an fp32 set (round to nearest even, as core/bf16.h).
DataSet to_bf16(const DataSet& f32) {
  DataSet d = make_set(f32.source, f32.name, DType::BF16, f32.n);
  const auto* in = reinterpret_cast<const float*>(f32.bytes.data());
  auto* out = reinterpret_cast<uint16_t*>(d.bytes.data());
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < f32.n; ++i) out[i] = gossamer::float_to_bf16(in[i]);
  return d;
}

// Gaussian N(0, sigma^2) values, a share `zeros` of them replaced by +0.0 at random positions.
DataSet synthetic(std::string name, DType dtype, size_t n, double sigma, double zeros,
                  uint64_t seed) {
  DataSet d = make_set("synthetic", std::move(name), dtype, n);
  Rng rng(seed);
  for (size_t i = 0; i < n; ++i) {
    const bool zero = zeros > 0 && rng.uniform() < zeros;
    const float v = zero ? 0.0f : float(sigma * rng.normal());
    if (dtype == DType::BF16)
      reinterpret_cast<uint16_t*>(d.bytes.data())[i] = gossamer::float_to_bf16(v);
    else
      reinterpret_cast<float*>(d.bytes.data())[i] = v;
  }
  return d;
}

// Entropy (bits) of the 8-bit exponent field over the whole array.
double exponent_entropy(const DataSet& d) {
  std::array<uint64_t, 256> hist{};
  if (d.dtype == DType::BF16) {
    const auto* v = reinterpret_cast<const uint16_t*>(d.bytes.data());
    for (size_t i = 0; i < d.n; ++i) ++hist[(v[i] >> 7) & 0xffu];
  } else {
    const auto* v = reinterpret_cast<const uint32_t*>(d.bytes.data());
    for (size_t i = 0; i < d.n; ++i) ++hist[(v[i] >> 23) & 0xffu];
  }
  double h = 0;
  for (uint64_t c : hist)
    if (c > 0) {
      const double p = double(c) / double(d.n);
      h -= p * std::log2(p);
    }
  return h;
}

// Median seconds of `iters` runs of f after `warmup` untimed ones.
template <class F>
double time_median(const CodecBenchOptions& o, F&& f) {
  for (int i = 0; i < o.warmup; ++i) f();
  std::vector<double> t(size_t(o.iters));
  for (double& s : t) {
    Stopwatch w;
    f();
    s = w.seconds();
  }
  return median(std::move(t));
}

// Round-trip results of one compressor on one data set.
struct Measured {
  bool ran = false;
  size_t packed = 0;  // compressed bytes
  double enc_s = 0, dec_s = 0;
  bool exact = true;  // every checked round trip bit for bit
};

// Fills out with a pattern, runs decode once and compares with the input.
template <class Decode>
bool check_round_trip(const DataSet& d, HostBuffer<uint8_t>& out, Decode&& decode) {
  std::memset(out.data(), 0xa5, d.size());
  decode();
  return std::memcmp(out.data(), d.bytes.data(), d.size()) == 0;
}

struct ZipResult {
  Measured one, many;  // 1 thread, --threads
  comm::zip::CodecStats stats;
};

ZipResult measure_zip(const DataSet& d, const CodecBenchOptions& o, int threads) {
  namespace zip = comm::zip;
  ZipResult r;
  HostBuffer<uint8_t> packed(zip::max_compressed_bytes(d.n, d.dtype, o.chunk_elems));
  HostBuffer<uint8_t> out(std::max<size_t>(d.size(), 1));
  for (int t : {1, threads}) {
    Measured& m = t == 1 ? r.one : r.many;
    if (t != 1 && threads == 1) break;
    const zip::CodecOptions options{o.chunk_elems, o.checksum, t};
    m.ran = true;
    m.packed = zip::compress(d.bytes.data(), d.n, d.dtype, packed.span(), options,
                             t == 1 ? &r.stats : nullptr);
    const std::span<const uint8_t> message(packed.data(), m.packed);
    auto decode = [&] { zip::decompress(message, out.data(), d.n, d.dtype, t); };
    m.exact = check_round_trip(d, out, decode);
    size_t size = 0;
    m.enc_s = time_median(
        o, [&] { size = zip::compress(d.bytes.data(), d.n, d.dtype, packed.span(), options); });
    m.exact = m.exact && size == m.packed;  // the same message every time
    m.dec_s = time_median(o, decode);
    m.exact = m.exact && std::memcmp(out.data(), d.bytes.data(), d.size()) == 0;
  }
  return r;
}

Measured measure_zstd(const DataSet& d, const CodecBenchOptions& o) {
  Measured m;
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  GOSSAMER_CHECK(cctx && dctx, "bench codec: cannot create a zstd context");
  HostBuffer<uint8_t> packed(ZSTD_compressBound(d.size()));
  HostBuffer<uint8_t> out(std::max<size_t>(d.size(), 1));
  auto encode = [&] {
    const size_t r =
        ZSTD_compressCCtx(cctx.get(), packed.data(), packed.size(), d.bytes.data(), d.size(), 1);
    GOSSAMER_CHECK(!ZSTD_isError(r), "bench codec: zstd: %s", ZSTD_getErrorName(r));
    return r;
  };
  auto decode = [&] {
    const size_t r = ZSTD_decompressDCtx(dctx.get(), out.data(), d.size(), packed.data(), m.packed);
    m.exact = m.exact && !ZSTD_isError(r) && r == d.size();
  };
  m.ran = true;
  m.packed = encode();
  m.exact = check_round_trip(d, out, decode);
  m.enc_s = time_median(o, encode);
  m.dec_s = time_median(o, decode);
  m.exact = m.exact && std::memcmp(out.data(), d.bytes.data(), d.size()) == 0;
  return m;
}

Measured measure_lz4(const DataSet& d, const CodecBenchOptions& o) {
  Measured m;
  if (d.size() > size_t(LZ4_MAX_INPUT_SIZE)) return m;  // one LZ4 block holds at most ~2 GB
  const int in_bytes = int(d.size());
  HostBuffer<uint8_t> packed(size_t(LZ4_compressBound(in_bytes)));
  HostBuffer<uint8_t> out(std::max<size_t>(d.size(), 1));
  auto encode = [&] {
    const int r =
        LZ4_compress_default(reinterpret_cast<const char*>(d.bytes.data()),
                             reinterpret_cast<char*>(packed.data()), in_bytes, int(packed.size()));
    GOSSAMER_CHECK(r > 0 || in_bytes == 0, "bench codec: LZ4_compress_default failed");
    return size_t(r);
  };
  auto decode = [&] {
    const int r = LZ4_decompress_safe(reinterpret_cast<const char*>(packed.data()),
                                      reinterpret_cast<char*>(out.data()), int(m.packed), in_bytes);
    m.exact = m.exact && r == in_bytes;
  };
  m.ran = true;
  m.packed = encode();
  m.exact = check_round_trip(d, out, decode);
  m.enc_s = time_median(o, encode);
  m.dec_s = time_median(o, decode);
  m.exact = m.exact && std::memcmp(out.data(), d.bytes.data(), d.size()) == 0;
  return m;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown (no model name in /proc/cpuinfo)";
}

class Table {
 public:
  Table(const CodecBenchOptions& o, int threads) : o_(o), threads_(threads) {}

  void print_header() const {
    std::printf(
        "| source | data | dtype | elements | MB | zip ratio | entropy bound | %% of bound | "
        "enc GB/s 1t | dec GB/s 1t | enc GB/s %dt | dec GB/s %dt | chunks raw/zero/dense/sparse "
        "| escapes %% | zstd-1 ratio | zstd-1 c GB/s | zstd-1 d GB/s | lz4 ratio | lz4 c GB/s | "
        "lz4 d GB/s |\n",
        threads_, threads_);
    std::printf(
        "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|\n");
    std::fflush(stdout);
  }

  // Measures one data set, prints its row and returns whether every round trip was exact.
  bool row(const DataSet& d) const {
    const double h = exponent_entropy(d);
    const bool bf16 = d.dtype == DType::BF16;
    const double bound = bf16 ? 16.0 / (8.0 + h) : 32.0 / (24.0 + h);
    const ZipResult zip = measure_zip(d, o_, threads_);
    const Measured zstd = measure_zstd(d, o_);
    const Measured lz4 = measure_lz4(d, o_);
    const double bytes = double(d.size());
    auto ratio = [&](const Measured& m) {
      return m.ran && m.packed ? strprintf("%.3f", bytes / double(m.packed)) : std::string("n/a");
    };
    auto gbs = [&](const Measured& m, double s) {
      return m.ran && s > 0 ? strprintf("%.2f", bytes / s * 1e-9) : std::string("-");
    };
    const auto& modes = zip.stats.chunks_by_mode;
    const double zip_ratio = zip.one.packed ? bytes / double(zip.one.packed) : 0;
    // Zero and sparse chunks are coded by position, not by exponent: where they are most of the
    // data, the exponent bound says nothing about the codec.
    const bool positional = 2 * (modes[1] + modes[3]) > modes[0] + modes[1] + modes[2] + modes[3];
    const std::string of_bound =
        positional ? std::string("n/a*") : strprintf("%.1f%%", 100.0 * zip_ratio / bound);
    std::printf(
        "| %s | %s | %s | %zu | %.1f | %s | %.3f | %s | %s | %s | %s | %s | %zu/%zu/%zu/%zu | "
        "%.2f | %s | %s | %s | %s | %s | %s |\n",
        d.source.c_str(), d.name.c_str(), bf16 ? "bf16" : "fp32", d.n, bytes * 1e-6,
        ratio(zip.one).c_str(), bound, of_bound.c_str(), gbs(zip.one, zip.one.enc_s).c_str(),
        gbs(zip.one, zip.one.dec_s).c_str(), gbs(zip.many, zip.many.enc_s).c_str(),
        gbs(zip.many, zip.many.dec_s).c_str(), modes[0], modes[1], modes[2], modes[3],
        d.n ? 100.0 * double(zip.stats.escapes) / double(d.n) : 0.0, ratio(zstd).c_str(),
        gbs(zstd, zstd.enc_s).c_str(), gbs(zstd, zstd.dec_s).c_str(), ratio(lz4).c_str(),
        gbs(lz4, lz4.enc_s).c_str(), gbs(lz4, lz4.dec_s).c_str());
    std::fflush(stdout);
    bool exact = true;
    auto report = [&](const char* codec, const Measured& m) {
      if (m.ran && !m.exact) {
        log_error("bench codec: %s round trip of %s %s (%s) is not bit-exact", codec,
                  d.source.c_str(), d.name.c_str(), bf16 ? "bf16" : "fp32");
        exact = false;
      }
    };
    report("zip (1 thread)", zip.one);
    report(strprintf("zip (%d threads)", threads_).c_str(), zip.many);
    report("zstd-1", zstd);
    report("lz4", lz4);
    return exact;
  }

 private:
  const CodecBenchOptions& o_;
  int threads_;
};

struct TensorGroup {
  std::string kind;
  std::vector<const io::TensorInfo*> tensors;  // in file order
};

// The F32 tensors of a safetensors file grouped by kind_of(name), the groups in the order of
// their first tensor; tensors of other dtypes are skipped (logged).
template <class KindOf>
std::vector<TensorGroup> f32_groups(const io::SafetensorsReader& file, KindOf kind_of) {
  std::vector<TensorGroup> groups;
  for (const io::TensorInfo& t : file.tensors()) {
    if (t.dtype != io::DType::DTYPE_F32) {
      log_info("bench codec: %s: %s is %s, not fp32: skipped", file.path().c_str(), t.name.c_str(),
               io::dtype_name(t.dtype));
      continue;
    }
    const std::string kind = kind_of(t.name);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const TensorGroup& g) { return g.kind == kind; });
    if (it == groups.end()) it = groups.insert(groups.end(), TensorGroup{kind, {}});
    it->tensors.push_back(&t);
  }
  return groups;
}

DataSet concatenate(const io::SafetensorsReader& file,
                    const std::vector<const io::TensorInfo*>& tensors, std::string source,
                    std::string name) {
  size_t n = 0;
  for (const io::TensorInfo* t : tensors) n += size_t(t->numel());
  DataSet d = make_set(std::move(source), std::move(name), DType::F32, n);
  size_t at = 0;
  for (const io::TensorInfo* t : tensors) {
    std::memcpy(d.bytes.data() + at, file.data(t->name), t->nbytes());
    at += t->nbytes();
  }
  return d;
}

// The gradient of one forward+backward (the batch's mean loss, scale 1) of the checkpoint's model
// on the training batch that follows the checkpoint (its loader position, as rank 0 of 1 would
// draw it): the flat gradient buffer, fp32.
DataSet checkpoint_gradient(const std::string& ckpt, const std::string& step) {
  const run::RunConfig config =
      run::parse_run_config(run::load_checkpoint_config(ckpt), ckpt + "/trainer.json");
  const int B = config.data.micro_batch, T = config.data.seq_len;
  data::DataLoader loader(data::expand_shard_patterns(config.data.train), T, config.train.seed,
                          config.data.shuffle, uint32_t(config.model.vocab_size));
  const data::LoaderPosition at = run::read_checkpoint_trainer_state(ckpt).loader;
  loader.set_position(at);
  HostBuffer<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
  loader.next_batch(0, 1, B, inputs.data(), targets.data());
  // On the CPU: the gradient is read on the host below.
  run::LoadedModel m = run::load_model_for_inference(
      ckpt, B, T, "", false, kernels::cpu::KernelsDevice::KERNELS_DEVICE_CPU, "bench codec");
  m.model->zero_grad();
  const float loss = m.model->forward(inputs.data(), targets.data(), B, T);
  m.model->backward(1.0f);
  log_info("bench codec: gradient of %s on %s (epoch %llu, window %llu): B %d x T %d, loss %.4f",
           ckpt.c_str(), config.data.train.c_str(), (unsigned long long)at.epoch,
           (unsigned long long)at.cursor, B, T, double(loss));
  const std::span<const float> g = m.model->grads();
  DataSet d =
      make_set("gradient " + step, strprintf("1 fwd+bwd, B %d x T %d", B, T), DType::F32, g.size());
  std::memcpy(d.bytes.data(), g.data(), g.size_bytes());
  return d;
}

// Every real-tensor data set of a checkpoint, in fp32, in the order they are measured.
// Calls each(fp32 set) as each is built.
template <class Each>
void checkpoint_sets(const std::string& path, Each each) {
  const std::string ckpt = run::resolve_checkpoint(path);
  const std::string step = std::filesystem::path(ckpt).filename().string();
  {
    io::SafetensorsReader model(ckpt + "/model.safetensors");
    for (const TensorGroup& g : f32_groups(model, [](const std::string&) { return "params"; }))
      each(concatenate(model, g.tensors, "params " + step,
                       strprintf("all %zu tensors", g.tensors.size())));
  }
  const std::string opt_path = ckpt + "/optimizer.safetensors";
  if (!std::filesystem::exists(opt_path)) {
    log_warn("bench codec: %s: no optimizer.safetensors; no optimizer state rows", ckpt.c_str());
  } else {
    io::SafetensorsReader opt(opt_path);
    // A per-rank state tensor is NAME@rankR: the ranks' tensors of NAME form one kind.
    const auto kind_of = [](const std::string& name) { return name.substr(0, name.find('@')); };
    for (const TensorGroup& g : f32_groups(opt, kind_of))
      each(concatenate(opt, g.tensors, "optimizer " + step, g.kind));
  }
  DataSet grad;
  try {
    grad = checkpoint_gradient(ckpt, step);
  } catch (const Error& e) {
    log_warn("bench codec: no gradient rows: %s", e.what());
    std::printf("# no gradient rows: %s\n", e.what());
    return;
  }
  each(grad);
}

}  // namespace

int run_codec_bench(const CodecBenchOptions& o) {
  GOSSAMER_CHECK(o.elements >= 1, "--elements: must be >= 1");
  GOSSAMER_CHECK(o.iters >= 1, "--iters: must be >= 1, found %d", o.iters);
  GOSSAMER_CHECK(o.warmup >= 0, "--warmup: must be >= 0, found %d", o.warmup);
  GOSSAMER_CHECK(o.threads >= 0, "--threads: must be >= 0, found %d", o.threads);
  GOSSAMER_CHECK(o.chunk_elems >= 1 && o.chunk_elems <= (size_t{1} << 24),
                 "--chunk-elems: %zu outside [1, 2^24]", o.chunk_elems);
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  std::printf(
      "# gossamer bench codec: zip codec (chunks of %zu elements, CRC-32C %s, implementation "
      "%s) vs zstd %s level 1 and lz4 %s (one thread each)\n",
      o.chunk_elems, o.checksum ? "on" : "off", comm::zip::crc32c_implementation(),
      ZSTD_versionString(), LZ4_versionString());
  std::printf("# cpu: %s, %d logical cores; zip threads: 1 and %d\n", cpu_model().c_str(),
              omp_get_num_procs(), threads);
  std::printf(
      "# time: median of %d run(s) after %d warm-up; GB/s of uncompressed bytes per second "
      "(1e9); MB = 1e6 bytes; ratio = uncompressed / compressed bytes\n",
      o.iters, o.warmup);
  std::printf(
      "# entropy bound: 16/(8+H) for bf16, 32/(24+H) for fp32, H = entropy (bits) of the 8-bit "
      "exponent field over the whole array; n/a*: most chunks are zero or sparse, coded by "
      "position, which the bound does not cover; escapes: escaped exponents, %% of elements\n");
  std::fflush(stdout);
  const Table table(o, threads);
  table.print_header();
  bool exact = true;
  auto measure = [&](const DataSet& d) { exact = table.row(d) && exact; };
  const size_t n = o.elements;
  measure(synthetic("gaussian sigma 0.02", DType::BF16, n, 0.02, 0, 1));
  measure(synthetic("gaussian sigma 0.02", DType::F32, n, 0.02, 0, 2));
  measure(synthetic("90% zeros + gaussian 0.02", DType::BF16, n, 0.02, 0.90, 3));
  measure(synthetic("99% zeros + gaussian 0.02", DType::BF16, n, 0.02, 0.99, 4));
  if (!o.checkpoint.empty())
    checkpoint_sets(o.checkpoint, [&](const DataSet& f32) {
      measure(f32);
      measure(to_bf16(f32));
    });
  if (!exact) {
    log_error("bench codec: a round trip was not bit-exact (see above)");
    return 1;
  }
  return 0;
}

}  // namespace gossamer::bench
