// Benchmarks the CPU gemm backends (OpenBLAS, oneDNN) on the GPT-2 training shapes and shows
// which backend GEMM_BACKEND_AUTO picks. Per shape: each backend's result is first checked
// against a double-precision reference on sampled entries (a wrong kernel is reported and never
// counted as fastest), then both backends are timed alternately (so drift of a shared machine
// hits both alike) and the median is reported. Output is a markdown table (docs/PERF.md).
//   bench_gemm [--bt 256,512,4096] [--c 128,768,1024] [--layers qkv,attproj,fc,fcproj,lmhead]
//              [--seconds S] [--min-reps N] [--max-reps N] [--sweep 16,32,64] [--mixed]
// --sweep instead times cubes n x n x n in the three layouts (fwd, dinp, dW) to find where the
// fixed per-call cost of a backend dominates.
// --mixed instead times gemm calls interleaved with OpenMP loops (as in a training step), which
// is where a pthread OpenBLAS and the OpenMP pool fight over the cores.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/median.h"
#include "kernels/cpu/gemm.h"

using gossamer::median;
using gossamer::kernels::cpu::GemmBackend;
namespace cpu = gossamer::kernels::cpu;

namespace {

constexpr int kVp = 50304;  // GPT-2 vocabulary padded to a multiple of 128

struct Options {
  std::vector<int> bts = {256, 512, 4096};
  std::vector<int> cs = {128, 768, 1024};
  std::vector<std::string> layers = {"qkv", "attproj", "fc", "fcproj", "lmhead"};
  double seconds = 0.4;  // timing budget per shape and backend
  int min_reps = 3, max_reps = 30;
  std::vector<int> sweep;
  bool mixed = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::vector<int> split_ints(const std::string& s) {
  std::vector<int> out;
  for (const auto& x : split(s)) out.push_back(std::stoi(x));
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      GOSSAMER_CHECK(i + 1 < argc, "%s needs a value", a.c_str());
      return argv[++i];
    };
    if (a == "--bt") {
      o.bts = split_ints(next());
    } else if (a == "--c") {
      o.cs = split_ints(next());
    } else if (a == "--layers") {
      o.layers = split(next());
    } else if (a == "--seconds") {
      o.seconds = std::stod(next());
    } else if (a == "--min-reps") {
      o.min_reps = std::stoi(next());
    } else if (a == "--max-reps") {
      o.max_reps = std::stoi(next());
    } else if (a == "--sweep") {
      o.sweep = split_ints(next());
    } else if (a == "--mixed") {
      o.mixed = true;
    } else {
      gossamer::fail(
          "unknown argument '%s' (see the comment at the top of "
          "bench/bench_gemm.cpp)",
          a.c_str());
    }
  }
  return o;
}

// One gemm call as the model makes it (row-major, leading dimensions tight).
struct Shape {
  std::string name;  // e.g. "fc.fwd"
  bool ta, tb;
  int M, N, K;
  float beta;
  double gflop() const { return 2.0 * M * N * K * 1e-9; }
  int lda() const { return ta ? M : K; }
  int ldb() const { return tb ? K : N; }
  size_t a_size() const { return size_t(M) * K; }
  size_t b_size() const { return size_t(K) * N; }
  size_t c_size() const { return size_t(M) * N; }
};

// Linear layer out(BT,OC) = inp(BT,IC) * W(OC,IC)^T and its two backward products.
std::vector<Shape> layer_shapes(const std::string& layer, int bt, int c) {
  int ic = c, oc = c;
  if (layer == "qkv") {
    oc = 3 * c;
  } else if (layer == "attproj") {
    oc = c;
  } else if (layer == "fc") {
    oc = 4 * c;
  } else if (layer == "fcproj") {
    ic = 4 * c;
  } else if (layer == "lmhead") {
    oc = kVp;
  } else {
    gossamer::fail("unknown layer '%s' (qkv|attproj|fc|fcproj|lmhead)", layer.c_str());
  }
  return {
      {layer + ".fwd", false, true, bt, oc, ic, 0.0f},    // out = inp * W^T
      {layer + ".dinp", false, false, bt, ic, oc, 1.0f},  // dinp += dout * W
      {layer + ".dW", true, false, oc, ic, bt, 1.0f},     // dW += dout^T * inp
  };
}

// Deterministic pseudo-random fill in [-1, 1) (fast enough for 200M elements).
void fill(std::vector<float>& v, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
#pragma omp parallel for firstprivate(x) schedule(static)
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t z = x + i * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v[i] = static_cast<float>(static_cast<double>(z >> 40) / double(1ull << 23) - 1.0);
  }
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string loadavg() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  char line[128] = "?";
  if (f) {
    if (!std::fgets(line, sizeof line, f)) line[0] = 0;
    std::fclose(f);
  }
  std::string s = line;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

struct Buffers {
  std::vector<float> a, b, c0, c;
};

// A and B filled from seeds 1 and 2, C0 from seed 3, C a copy of C0.
Buffers make_buffers(const Shape& s) {
  Buffers buf;
  buf.a.resize(s.a_size());
  buf.b.resize(s.b_size());
  buf.c0.resize(s.c_size());
  fill(buf.a, 1);
  fill(buf.b, 2);
  fill(buf.c0, 3);
  buf.c = buf.c0;
  return buf;
}

// Max over sampled entries of |C - ref| / (K * eps * sum_k |a_ik b_kj|): <= 1 for any correct
// float summation order, so > 1 marks a wrong kernel.
double check(const Shape& s, const Buffers& buf) {
  const double eps = 1.1920928955078125e-07;
  uint64_t x = 12345;
  double worst = 0.0;
  for (int t = 0; t < 260; ++t) {
    int i, j;
    if (t < 4) {  // corners first
      i = (t & 1) ? s.M - 1 : 0;
      j = (t & 2) ? s.N - 1 : 0;
    } else {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      i = int((x >> 33) % uint64_t(s.M));
      j = int((x >> 13) % uint64_t(s.N));
    }
    double dot = 0.0, mag = 0.0;
    for (int k = 0; k < s.K; ++k) {
      const double a = s.ta ? buf.a[size_t(k) * s.M + i] : buf.a[size_t(i) * s.K + k];
      const double b = s.tb ? buf.b[size_t(j) * s.K + k] : buf.b[size_t(k) * s.N + j];
      dot += a * b;
      mag += std::fabs(a * b);
    }
    const double cin = s.beta != 0.0f ? buf.c0[size_t(i) * s.N + j] : 0.0;
    const double ref = dot + cin;
    const double err = std::fabs(double(buf.c[size_t(i) * s.N + j]) - ref) /
                       ((s.K + 2) * eps * (mag + std::fabs(cin)) + 1e-30);
    worst = std::max(worst, std::isfinite(err) ? err : 1e30);
  }
  return worst;
}

using cpu::GemmImpl;
const GemmImpl kImpls[] = {GemmImpl::GEMM_IMPL_OPENBLAS, GemmImpl::GEMM_IMPL_ONEDNN_MATMUL,
                           GemmImpl::GEMM_IMPL_ONEDNN_SGEMM};
constexpr int kNumImpls = 3;

void call(GemmImpl impl, const Shape& s, Buffers& buf) {
  cpu::gemm_with_impl(impl, s.ta, s.tb, s.M, s.N, s.K, 1.0f, buf.a.data(), s.lda(), buf.b.data(),
                      s.ldb(), s.beta, buf.c.data(), s.N);
}

struct Result {
  double ms[kNumImpls] = {};
  double err[kNumImpls] = {};
  bool ok[kNumImpls] = {};
  int reps = 0;
};

Result measure(const Shape& s, const Options& o) {
  Buffers buf = make_buffers(s);
  Result r;
  double first_s = 0.0;
  for (int i = 0; i < kNumImpls; ++i) {
    std::copy(buf.c0.begin(), buf.c0.end(), buf.c.begin());
    call(kImpls[i], s, buf);  // warm-up 1 (creates the oneDNN primitive) and correctness check
    r.err[i] = check(s, buf);
    r.ok[i] = r.err[i] <= 1.0;
    const double t0 = now_s();
    call(kImpls[i], s, buf);  // warm-up 2, timed to choose the repeat count
    first_s = std::max(first_s, now_s() - t0);
  }
  r.reps = std::clamp(int(o.seconds / std::max(first_s, 1e-9)), o.min_reps, o.max_reps);
  std::vector<double> times[kNumImpls];
  for (int rep = 0; rep < r.reps; ++rep) {
    for (int i = 0; i < kNumImpls; ++i) {  // round robin: machine drift hits all alike
      const double t0 = now_s();
      call(kImpls[i], s, buf);  // beta = 1 keeps accumulating into C: fine for timing
      times[i].push_back(now_s() - t0);
    }
  }
  for (int i = 0; i < kNumImpls; ++i) r.ms[i] = median(times[i]) * 1e3;
  return r;
}

int impl_index(GemmImpl impl) {
  for (int i = 0; i < kNumImpls; ++i)
    if (kImpls[i] == impl) return i;
  return 0;
}

// A training-like pattern: each gemm is followed by an OpenMP loop over its output (bias, GELU,
// residual...). Reports ms per (gemm + loop) per implementation.
void run_mixed(const Options& o) {
  std::printf("| BT | C | gemm | impl | gemm+loop ms | loop alone ms | gemm alone ms |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int bt : o.bts) {
    for (int c : o.cs) {
      for (const Shape& s : layer_shapes("fc", bt, c)) {
        Buffers buf = make_buffers(s);
        std::vector<float> act(buf.c.size());
        auto loop = [&] {  // a cheap elementwise pass, like a GELU over the output
#pragma omp parallel for schedule(static)
          for (size_t i = 0; i < act.size(); ++i) act[i] = 0.5f * buf.c[i] * (1.0f + buf.c[i]);
        };
        for (GemmImpl impl : kImpls) {
          for (int w = 0; w < 2; ++w) call(impl, s, buf), loop();
          const int reps = 20;
          std::vector<double> both, loop_only, gemm_only;
          for (int r = 0; r < reps; ++r) {
            double t0 = now_s();
            call(impl, s, buf);
            loop();
            both.push_back(now_s() - t0);
          }
          for (int r = 0; r < reps; ++r) {
            double t0 = now_s();
            loop();
            loop_only.push_back(now_s() - t0);
          }
          for (int r = 0; r < reps; ++r) {
            double t0 = now_s();
            call(impl, s, buf);
            gemm_only.push_back(now_s() - t0);
          }
          std::printf("| %d | %d | %s %dx%dx%d | %s | %.3f | %.3f | %.3f |\n", bt, c,
                      s.name.c_str(), s.M, s.N, s.K, cpu::gemm_impl_name(impl), median(both) * 1e3,
                      median(loop_only) * 1e3, median(gemm_only) * 1e3);
          std::fflush(stdout);
        }
      }
    }
  }
}

// One row of the table: a shape and the (BT, C) it came from (0, 0 for --sweep cubes).
struct Job {
  int bt, c;
  Shape s;
};

// --sweep: the three layouts of each cube; otherwise every layer's shapes for every (BT, C).
std::vector<Job> make_jobs(const Options& o) {
  std::vector<Job> jobs;
  for (int n : o.sweep) {
    jobs.push_back({0, 0, {"cube.fwd", false, true, n, n, n, 0.0f}});
    jobs.push_back({0, 0, {"cube.dinp", false, false, n, n, n, 1.0f}});
    jobs.push_back({0, 0, {"cube.dW", true, false, n, n, n, 1.0f}});
  }
  if (o.sweep.empty()) {
    for (int bt : o.bts)
      for (int c : o.cs)
        for (const std::string& layer : o.layers)
          for (const Shape& s : layer_shapes(layer, bt, c)) jobs.push_back({bt, c, s});
  }
  return jobs;
}

// The markdown table of measure() results and the totals printed under it.
class Table {
 public:
  Table() {
    std::printf(
        "| BT | C | gemm | ta tb beta | M x N x K | GFLOP | openblas ms | GF/s | "
        "onednn-matmul ms | GF/s | onednn-sgemm ms | GF/s | fastest | onednn picks | "
        "auto picks | reps |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  }

  // Prints the job's row and adds it to the totals. Wrong results never count as fastest.
  void add(const Job& job, const Result& r) {
    const Shape& s = job.s;
    auto pick = [&](GemmBackend be) {
      cpu::gemm_set_backend(be);
      return cpu::gemm_impl_for(s.ta, s.tb, s.M, s.N, s.K, 1.0f, s.beta);
    };
    const int auto_i = impl_index(pick(GemmBackend::GEMM_BACKEND_AUTO));
    const int onednn_i = impl_index(pick(GemmBackend::GEMM_BACKEND_ONEDNN));
    double gfs[kNumImpls];
    int fastest = -1;
    for (int i = 0; i < kNumImpls; ++i) {
      gfs[i] = s.gflop() / (r.ms[i] * 1e-3);
      if (!r.ok[i]) {
        ++wrong_;
        continue;
      }
      total_ms_[i] += r.ms[i];
      if (gfs[i] > best_[i]) {
        best_[i] = gfs[i];
        best_shape_[i] = gossamer::strprintf("BT=%d C=%d %s %dx%dx%d", job.bt, job.c,
                                             s.name.c_str(), s.M, s.N, s.K);
      }
      if (fastest < 0 || r.ms[i] < r.ms[fastest]) fastest = i;
    }
    total_auto_ += r.ms[auto_i];
    total_onednn_ += r.ms[onednn_i];
    if (fastest >= 0) total_oracle_ += r.ms[fastest];
    // A miss: AUTO's pick is more than 10% slower than the fastest implementation.
    if (fastest >= 0 && r.ms[auto_i] > 1.1 * r.ms[fastest]) ++auto_misses_;
    ++rows_;
    std::string cells;
    for (int i = 0; i < kNumImpls; ++i) {
      cells += r.ok[i] ? gossamer::strprintf(" %.4g | %.1f |", r.ms[i], gfs[i])
                       : gossamer::strprintf(" WRONG (err %.2g) | - |", r.err[i]);
    }
    std::printf("| %d | %d | %s | %d %d %g | %dx%dx%d | %.4g |%s %s | %s | %s | %d |\n", job.bt,
                job.c, s.name.c_str(), s.ta, s.tb, s.beta, s.M, s.N, s.K, s.gflop(), cells.c_str(),
                fastest < 0 ? "-" : cpu::gemm_impl_name(kImpls[fastest]),
                cpu::gemm_impl_name(kImpls[onednn_i]), cpu::gemm_impl_name(kImpls[auto_i]), r.reps);
    std::fflush(stdout);
  }

  // Prints the totals; returns the number of wrong results.
  int finish() const {
    std::printf("\n/proc/loadavg at end: %s\nshapes: %d, wrong results: %d\n", loadavg().c_str(),
                rows_, wrong_);
    for (int i = 0; i < kNumImpls; ++i) {
      std::printf("best %s: %.1f GFLOP/s (%s); sum of medians %.1f ms\n",
                  cpu::gemm_impl_name(kImpls[i]), best_[i], best_shape_[i].c_str(), total_ms_[i]);
    }
    std::printf("backend onednn: sum of medians %.1f ms\n", total_onednn_);
    std::printf(
        "backend auto: sum of medians %.1f ms (fastest-per-shape %.1f ms); auto's pick is "
        ">10%% slower than the fastest on %d of %d shapes\n",
        total_auto_, total_oracle_, auto_misses_, rows_);
    std::printf("best sgemm rate seen (MFU denominator): %.1f GFLOP/s\n",
                *std::max_element(best_, best_ + kNumImpls));
    cpu::gemm_set_backend(GemmBackend::GEMM_BACKEND_AUTO);
    std::printf("gemm_peak_gflops_measured() with auto: %.1f GFLOP/s\n",
                cpu::gemm_peak_gflops_measured());
    return wrong_;
  }

 private:
  double best_[kNumImpls] = {}, total_ms_[kNumImpls] = {};
  std::string best_shape_[kNumImpls];
  double total_auto_ = 0.0, total_onednn_ = 0.0, total_oracle_ = 0.0;
  int wrong_ = 0, auto_misses_ = 0, rows_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    std::printf("bench_gemm: %s\n", cpu::gemm_describe().c_str());
    std::printf("threads: %d (omp_get_max_threads); /proc/loadavg at start: %s\n\n",
                omp_get_max_threads(), loadavg().c_str());
    if (o.mixed) {
      run_mixed(o);
      return 0;
    }
    Table table;
    for (const Job& job : make_jobs(o)) table.add(job, measure(job.s, o));
    return table.finish() == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm: %s\n", e.what());
    return 1;
  }
}
