// A fuzz loop over data::ShardReader. Each case copies a small valid token shard (version 1,
// 16-bit tokens, or version 2, 32-bit), applies seeded mutations to it (bit flips, a header word
// set to an interesting value, overwritten bytes, truncation, junk appended, a consistent shard
// of another length, duplicated and swapped regions, several at once) and opens the result,
// reading every token, a slice and past the end, and every kScanEvery cases max_token and
// check_tokens_below. Case i draws everything from std::mt19937_64 seeded with base seed + i, so
// a failure names the case, its seed and its mutations; GOSSAMER_FUZZ_ROUNDS=N runs N times as
// many cases. A table of outcomes per mutation kind goes to stdout.
// Invariant: every case ends in a gossamer::Error or in a load whose header matches the file and
// whose every token served equals the file's own bytes (shards have no checksum). Any other
// exception, a crash or an out-of-bounds access (this runs in the sanitizer build too) is a
// failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/shard.h"
#include "fuzz_util.h"
#include "safetensors_test_util.h"
#include "test_util.h"

namespace {

using namespace gossamer;
using gossamer::testing::Bytes;
using gossamer::testing::TempDir;
using gossamer::testing::fuzz::CrashReport;
using gossamer::testing::fuzz::g_case;
using gossamer::testing::fuzz::get_i32;
using gossamer::testing::fuzz::kMaxFailures;
using gossamer::testing::fuzz::Mutator;
using gossamer::testing::fuzz::OneThread;
using gossamer::testing::fuzz::rounds;
using gossamer::testing::fuzz::set_i32;
using gossamer::testing::fuzz::Table;

constexpr uint64_t kShardSeed = 0x54a4d000'00000000ull;

struct ShardMutator : Mutator {
  using Mutator::Mutator;

  // A header word (magic, version, count, or a reserved one) set to an interesting value.
  void header_field(Bytes& b) {
    if (b.size() < 1024) return overwrite(b);
    const size_t field = coin(0.8) ? below(3) : 3 + below(253);
    const int32_t old = get_i32(b, field);
    const int64_t n = get_i32(b, 2);  // wide: no overflow below; the casts wrap
    const int32_t v = pick(std::vector<int32_t>{
        0, 1, 2, 3, -1, INT32_MIN, INT32_MAX, data::kShardMagic + 1, data::kShardMagic - 1,
        int32_t(n + 1), int32_t(n - 1), int32_t(n * 2), int32_t(n / 2), int32_t(rng())});
    set_i32(b, field, v);
    note(strprintf("header word %zu: %d -> %d", field, old, v));
  }

  // A consistent shard of another length (and maybe version): the count and the file agree.
  void recount(Bytes& b) {
    if (b.size() < 1024) return overwrite(b);
    const int32_t version = coin(0.8) ? get_i32(b, 1) : 1 + int32_t(below(2));
    const int32_t n = int32_t(below(1401));  // up to twice the valid shards' length
    set_i32(b, 1, version);
    set_i32(b, 2, n);
    const size_t old = b.size();
    b.resize(1024 + size_t(n) * (version == 1 ? 2 : 4));
    for (size_t i = old; i < b.size(); ++i) b[i] = static_cast<unsigned char>(rng());
    note(strprintf("version %d, count %d, file resized to match", version, n));
  }

  void apply(const std::string& kind, Bytes& b) {
    if (kind == "bit_flip")
      flip_bit(b, 0, b.size());
    else if (kind == "header_field")
      header_field(b);
    else if (kind == "overwrite")
      overwrite(b);
    else if (kind == "truncate")
      truncate(b);
    else if (kind == "extend")
      extend(b);
    else if (kind == "recount")
      recount(b);
    else if (kind == "copy_region")
      copy_region(b);
    else if (kind == "swap_regions")
      swap_regions(b);
    else if (kind == "compound") {
      const size_t n = 2 + below(3);
      for (size_t i = 0; i < n; ++i)
        apply(pick(std::vector<std::string>{"bit_flip", "header_field", "overwrite", "truncate",
                                            "extend", "recount", "copy_region", "swap_regions"}),
              b);
    } else {
      FAIL() << "unknown mutation kind " << kind;
    }
  }
};

const std::vector<std::string> kShardKinds = {"bit_flip",    "header_field", "overwrite",
                                              "truncate",    "extend",       "recount",
                                              "copy_region", "swap_regions", "compound"};

// Every how many cases the loaded shard's max_token and check_tokens_below are checked too: the
// first call on a shard writes its verdict cache, two fsyncs, which dominate the loop's time.
constexpr int kScanEvery = 8;

// Why the reader's header (magic, version, count) or the file's length disagrees with `file`,
// or "" when they agree.
std::string header_mismatch(const data::ShardReader& r, const Bytes& file) {
  int32_t h[3];
  std::memcpy(h, file.data(), sizeof h);
  const uint64_t width = r.version() == 1 ? 2 : 4;
  if (h[0] != data::kShardMagic || h[1] != r.version() || uint64_t(h[2]) != r.num_tokens() ||
      file.size() != 1024 + r.num_tokens() * width)
    return strprintf(
        "FAIL: accepted a shard whose header (%d, %d, %d) does not match the file "
        "(%zu bytes)",
        h[0], h[1], h[2], file.size());
  return "";
}

// Reads every token, a slice, and past the end; why what the reader serves differs from the
// bytes of `file` (or a read past the end did not throw), or "". *max: the largest token.
std::string token_mismatch(const data::ShardReader& r, const Bytes& file, uint32_t* max) {
  const uint64_t width = r.version() == 1 ? 2 : 4;
  const uint64_t n = r.num_tokens();
  std::vector<int32_t> all(n);
  r.read(0, all);
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t want = 0;
    std::memcpy(&want, file.data() + 1024 + i * width, width);
    *max = std::max(*max, want);
    if (uint32_t(all[i]) != want)
      return strprintf("FAIL: token %llu read as %u, the file holds %u", (unsigned long long)i,
                       uint32_t(all[i]), want);
  }
  if (n > 0) {  // a slice, and reads past the end
    const uint64_t start = n / 3, len = n - start;
    std::vector<int32_t> slice(len);
    r.read(start, slice);
    if (!std::equal(slice.begin(), slice.end(), all.begin() + ptrdiff_t(start)))
      return "FAIL: a slice differs from the whole";
  }
  for (uint64_t start : {n, n + 1, uint64_t(0)}) {
    std::vector<int32_t> over(n + 1 - std::min<uint64_t>(start, n));
    try {
      r.read(start, over);
      return strprintf("FAIL: read of %zu tokens at %llu of %llu did not throw", over.size(),
                       (unsigned long long)start, (unsigned long long)n);
    } catch (const Error&) {
    }
  }
  return "";
}

// Why max_token or check_tokens_below disagrees with `max`, the file's largest token, or "".
std::string scan_mismatch(const data::ShardReader& r, uint32_t max) {
  if (r.max_token() != max)
    return strprintf("FAIL: max_token %u, the file's is %u", r.max_token(), max);
  if (max < UINT32_MAX) r.check_tokens_below(max + 1);
  if (r.num_tokens() > 0) {
    try {
      r.check_tokens_below(max);
      return "FAIL: check_tokens_below(max) did not throw";
    } catch (const Error&) {
    }
  }
  return "";
}

// Opens the shard at `path` (holding `file`) and checks everything it serves against the bytes,
// with max_token and check_tokens_below when `scan`.
std::string run_shard_case(const std::string& path, const Bytes& file, const Bytes& original,
                           bool scan) {
  gossamer::testing::write_bytes(path, file);
  try {
    data::ShardReader r(path);
    std::string why = header_mismatch(r, file);
    uint32_t max = 0;
    if (why.empty()) why = token_mismatch(r, file, &max);
    if (why.empty() && scan) why = scan_mismatch(r, max);
    if (!why.empty()) return why;
    const bool same = file.size() == original.size() &&
                      std::equal(file.begin() + 1024, file.end(), original.begin() + 1024);
    return same ? "loaded" : "loaded_other_tokens";
  } catch (const Error&) {
    return "open";
  } catch (const std::exception& e) {
    return std::string("FAIL: threw a non-gossamer exception: ") + e.what();
  }
}

std::vector<uint32_t> shard_tokens(int version, size_t n) {
  std::mt19937_64 rng(version);
  std::vector<uint32_t> t(n);
  for (uint32_t& x : t) x = version == 1 ? uint32_t(rng() % 50257) : uint32_t(rng());
  return t;
}

TEST(FuzzReaders, ShardsNeverCrashAndServeOnlyTheirOwnBytes) {
  CrashReport report;
  OneThread one_thread;
  TempDir dir;
  std::vector<Bytes> originals;
  for (int version : {1, 2}) {
    const std::string p = dir.file(strprintf("valid_v%d.bin", version));
    data::write_shard(p, shard_tokens(version, version == 1 ? 700 : 350), version);
    originals.push_back(gossamer::testing::read_bytes(p));
  }
  const int cases = 2000 * rounds();
  Table table;
  table.columns = {"unchanged", "open", "loaded", "loaded_other_tokens"};
  int failures = 0, scanned = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < cases; ++i) {
    const std::string& kind = kShardKinds[size_t(i) % kShardKinds.size()];
    const Bytes& original = originals[size_t(i / kShardKinds.size()) % originals.size()];
    const uint64_t seed = kShardSeed + uint64_t(i);
    ShardMutator m(seed);
    Bytes b = original;
    m.apply(kind, b);
    std::snprintf(g_case, sizeof g_case, "shard case %d, kind %s, seed 0x%016llx: %s", i,
                  kind.c_str(), (unsigned long long)seed, m.log.c_str());
    // A fresh name per case, so the max_token verdict cache of an earlier case never applies.
    const std::string path = dir.file(strprintf("case_%d.bin", i));
    const bool scan = i % kScanEvery == 0;
    std::string outcome = run_shard_case(path, b, original, scan);
    scanned += scan && outcome.starts_with("loaded");
    std::filesystem::remove(path);
    std::filesystem::remove(dir.file(strprintf(".case_%d.bin.max_token", i)));
    if (b == original)
      outcome =
          outcome == "loaded" ? "unchanged" : "FAIL: the valid shard did not load: " + outcome;
    if (outcome.starts_with("FAIL")) {
      if (++failures <= kMaxFailures)
        ADD_FAILURE() << "case " << i << " (kind " << kind << ", seed 0x" << std::hex << seed
                      << std::dec << "): " << outcome << "\n  mutations: " << m.log;
      outcome = "FAIL";
    }
    table.add(kind, outcome);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failures) table.columns.push_back("FAIL");
  table.print(strprintf("shard fuzz: %d cases (versions 1 and 2), base seed 0x%016llx, %.2f s",
                        cases, (unsigned long long)kShardSeed, secs));
  std::printf(
      "  open: refused with gossamer::Error; loaded: header, length and every token served match "
      "the file; loaded_other_tokens: the same, with token bytes that differ from the original "
      "(the shard format has no checksum); max_token and check_tokens_below checked on %d "
      "loaded shards\n",
      scanned);
  EXPECT_EQ(failures, 0);
}

}  // namespace
