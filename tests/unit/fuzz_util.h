// What the reader fuzz tests (test_fuzz_safetensors.cpp, test_fuzz_shards.cpp) share: the
// GOSSAMER_FUZZ_ROUNDS multiplier, the case being run (printed to stderr if the process dies in
// it), a one-OpenMP-thread scope, the Mutator base with the byte-level mutations both formats
// use, the per-kind outcome Table, and little-endian accessors of a file's bytes.
// Invariant: a Mutator draws everything from its std::mt19937_64, in a fixed order per call, so
// a case's seed alone reproduces its mutations (and a failure names the seed that replays it).
#pragma once

#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "safetensors_test_util.h"

#ifdef GOSSAMER_SANITIZE_BUILD
#include <sanitizer/common_interface_defs.h>
#endif

namespace gossamer::testing::fuzz {

// Failures are reported with the case that produced them, at most kMaxFailures of them.
inline constexpr int kMaxFailures = 20;

// How many times the default number of cases to run: GOSSAMER_FUZZ_ROUNDS, else 1.
inline int rounds() {
  const char* s = std::getenv("GOSSAMER_FUZZ_ROUNDS");
  return s && std::atoi(s) > 0 ? std::atoi(s) : 1;
}

// ---- the case being run, printed if the process dies in it -------------------------------

inline char g_case[1024] = "(no case yet)";

inline void print_case() {
  const char prefix[] = "\nfuzz: died in ";
  ssize_t ignored = ::write(2, prefix, sizeof prefix - 1);
  ignored = ::write(2, g_case, std::strlen(g_case));
  ignored = ::write(2, "\n", 1);
  (void)ignored;
}

inline void on_fatal_signal(int sig) {
  print_case();
  ::raise(sig);  // SA_RESETHAND restored the default action
}

// Installs the report for the test's lifetime: a sanitizer death callback, or signal handlers.
class CrashReport {
 public:
  CrashReport() {
#ifdef GOSSAMER_SANITIZE_BUILD
    __sanitizer_set_death_callback(print_case);
#endif
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND;
    for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~CrashReport() {
#ifdef GOSSAMER_SANITIZE_BUILD
    __sanitizer_set_death_callback(nullptr);
#endif
    for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  CrashReport(const CrashReport&) = delete;
  CrashReport& operator=(const CrashReport&) = delete;

 private:
  static constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  struct sigaction old_[std::size(kSignals)]{};
};

// One OpenMP thread while it lives: the files are a few KB, and waking a second thread for every
// checksum or token scan costs more than the work (a lot more on a busy machine).
class OneThread {
 public:
  OneThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneThread() { omp_set_num_threads(saved_); }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int saved_;
};

// ---- little-endian fields of a file ------------------------------------------------------------

// The u64 at the start of b (b holds at least 8 bytes).
inline uint64_t get_u64(const Bytes& b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[size_t(i)];
  return v;
}
inline void set_u64(Bytes& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[size_t(i)] = static_cast<unsigned char>(v >> (8 * i));
}

// The i-th 32-bit word of b.
inline int32_t get_i32(const Bytes& b, size_t i) {
  int32_t v;
  std::memcpy(&v, b.data() + 4 * i, 4);
  return v;
}
inline void set_i32(Bytes& b, size_t i, int32_t v) {
  std::memcpy(b.data() + 4 * i, &v, 4);
}

// ---- mutations shared by both formats -------------------------------------------------------

struct Mutator {
  std::mt19937_64 rng;
  std::string log;  // what was done, for the failure message

  explicit Mutator(uint64_t seed) : rng(seed) {}
  uint64_t below(uint64_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
  }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }
  void note(const std::string& s) { log += (log.empty() ? "" : "; ") + s; }

  void flip_bit(Bytes& b, size_t lo, size_t hi) {
    if (hi <= lo) return note("flip: empty range");
    const size_t at = lo + below(hi - lo);
    const int bit = int(below(8));
    b[at] ^= static_cast<unsigned char>(1u << bit);
    note(strprintf("flip bit %d of byte %zu", bit, at));
  }
  void overwrite(Bytes& b) {
    if (b.empty()) return note("overwrite: empty file");
    const size_t at = below(b.size()), n = std::min<size_t>(1 + below(8), b.size() - at);
    static const std::vector<unsigned char> kInteresting = {0x00, 0xff, 0x7f, 0x80, ' ', '"',
                                                            '0',  '9',  '{',  ']',  ',', '-'};
    for (size_t i = 0; i < n; ++i)
      b[at + i] = coin() ? pick(kInteresting) : static_cast<unsigned char>(below(256));
    note(strprintf("overwrite %zu bytes at %zu", n, at));
  }
  void truncate(Bytes& b) {
    const size_t n = below(b.size());
    b.resize(n);
    note(strprintf("truncate to %zu bytes", n));
  }
  void extend(Bytes& b) {
    const size_t n = 1 + below(64);
    const int fill = int(below(3));  // 0: random, 1: zeros, 2: spaces
    for (size_t i = 0; i < n; ++i)
      b.push_back(fill == 0 ? static_cast<unsigned char>(below(256)) : fill == 1 ? 0 : ' ');
    note(strprintf("append %zu junk bytes (fill %d)", n, fill));
  }
  void copy_region(Bytes& b) {
    if (b.size() < 2) return note("copy: file too small");
    const size_t n = 1 + below(std::min<size_t>(64, b.size() / 2));
    const size_t from = below(b.size() - n + 1), to = below(b.size() - n + 1);
    std::memmove(b.data() + to, b.data() + from, n);
    note(strprintf("copy %zu bytes from %zu over %zu", n, from, to));
  }
  void swap_regions(Bytes& b) {
    if (b.size() < 2) return note("swap: file too small");
    const size_t n = 1 + below(std::min<size_t>(64, b.size() / 2));
    const size_t x = below(b.size() - 2 * n + 1), y = x + n + below(b.size() - x - 2 * n + 1);
    std::swap_ranges(b.begin() + ptrdiff_t(x), b.begin() + ptrdiff_t(x + n),
                     b.begin() + ptrdiff_t(y));
    note(strprintf("swap %zu bytes at %zu and %zu", n, x, y));
  }
};

// ---- outcome table ----------------------------------------------------------------------------

// Counts of outcomes (columns) per mutation kind (rows, in first-seen order), printed to stdout.
struct Table {
  std::vector<std::string> columns;
  std::map<std::string, std::map<std::string, int>> rows;  // kind -> column -> count
  std::vector<std::string> order;

  void add(const std::string& kind, const std::string& column) {
    if (!rows.count(kind)) order.push_back(kind);
    ++rows[kind][column];
  }
  void print(const std::string& title) const {
    std::printf("%s\n%-16s %6s", title.c_str(), "mutation", "cases");
    for (const std::string& c : columns)
      std::printf(" %*s", int(std::max<size_t>(c.size(), 6)), c.c_str());
    std::printf("\n");
    std::map<std::string, int> total;
    for (const std::string& kind : order) {
      print_row(kind, rows.at(kind));
      for (const auto& [c, k] : rows.at(kind)) total[c] += k;
    }
    print_row("total", total);
    std::fflush(stdout);
  }

 private:
  void print_row(const std::string& name, const std::map<std::string, int>& counts) const {
    int n = 0;
    for (const auto& [c, k] : counts) n += k;
    std::printf("%-16s %6d", name.c_str(), n);
    for (const std::string& c : columns) {
      auto it = counts.find(c);
      std::printf(" %*d", int(std::max<size_t>(c.size(), 6)), it == counts.end() ? 0 : it->second);
    }
    std::printf("\n");
  }
};

}  // namespace gossamer::testing::fuzz
