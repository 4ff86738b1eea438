// Tests of the token shard format and the DataLoader. Shards are synthetic and written into
// a fresh temporary directory with write_shard; every token equals its global index in the
// concatenated corpus, so a window is identified by its first token and coverage,
// disjointness, shuffling, epoch rollover and resume are asserted exactly.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/loader.h"
#include "data/shard.h"
#include "data/text_check.h"
#include "test_util.h"

namespace gossamer::data {
namespace {

using gossamer::testing::expect_error;
using gossamer::testing::TempDir;

namespace fs = std::filesystem;

// Writes a raw file: a 256-int header (magic, version, count) followed by body_bytes zeros.
void write_raw(const std::string& path, int32_t magic, int32_t version, int32_t count,
               size_t body_bytes) {
  std::vector<int32_t> header(kShardHeaderInts, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = count;
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(header.data()), header.size() * sizeof(int32_t));
  const std::vector<char> body(body_bytes, 0);
  f.write(body.data(), static_cast<std::streamsize>(body.size()));
}

std::vector<int32_t> read_all(const ShardReader& r) {
  std::vector<int32_t> out(r.num_tokens());
  r.read(0, out);
  return out;
}

// ---- shards -------------------------------------------------------------------------------

TEST(Shard, RoundTripVersion1) {
  TempDir dir;
  std::vector<uint32_t> tokens(5000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>(i * 37 % 65536);
  tokens[7] = 65535;
  const std::string path = dir.file("v1.bin");
  write_shard(path, tokens, kShardVersionU16);
  EXPECT_EQ(fs::file_size(path), 1024u + 2 * tokens.size());
  EXPECT_EQ(gossamer::testing::temporaries_in(dir.path()), std::vector<std::string>{});
  ShardReader r(path);
  EXPECT_EQ(r.path(), path);
  EXPECT_EQ(r.version(), 1);
  ASSERT_EQ(r.num_tokens(), tokens.size());
  const std::vector<int32_t> all = read_all(r);
  for (size_t i = 0; i < tokens.size(); ++i) ASSERT_EQ(all[i], static_cast<int32_t>(tokens[i]));
  std::vector<int32_t> part(10);
  r.read(4990, part);
  for (size_t i = 0; i < part.size(); ++i)
    EXPECT_EQ(part[i], static_cast<int32_t>(tokens[4990 + i]));
}

TEST(Shard, RoundTripVersion2) {
  TempDir dir;
  const std::vector<uint32_t> tokens = {0, 1, 65535, 65536, 1u << 24, 2147483647u, 4000000000u};
  const std::string path = dir.file("v2.bin");
  write_shard(path, tokens, kShardVersionU32);
  EXPECT_EQ(fs::file_size(path), 1024u + 4 * tokens.size());
  ShardReader r(path);
  EXPECT_EQ(r.version(), 2);
  const std::vector<int32_t> all = read_all(r);
  ASSERT_EQ(all.size(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(static_cast<uint32_t>(all[i]), tokens[i]);
}

TEST(Shard, AutoVersionAndEmpty) {
  TempDir dir;
  const std::vector<uint32_t> small = {1, 2, 65535};
  const std::vector<uint32_t> large = {1, 2, 65536};
  write_shard(dir.file("small.bin"), small);
  write_shard(dir.file("large.bin"), large);
  write_shard(dir.file("empty.bin"), {});
  EXPECT_EQ(ShardReader(dir.file("small.bin")).version(), 1);
  EXPECT_EQ(ShardReader(dir.file("large.bin")).version(), 2);
  EXPECT_EQ(read_all(ShardReader(dir.file("large.bin")))[2], 65536);
  ShardReader empty(dir.file("empty.bin"));
  EXPECT_EQ(empty.num_tokens(), 0u);
  empty.read(0, {});
}

TEST(Shard, WriteErrors) {
  TempDir dir;
  const std::string path = dir.file("bad.bin");
  const std::vector<uint32_t> tokens = {1, 2, 70000, 3};
  expect_error([&] { write_shard(path, tokens, kShardVersionU16); },
               {path, "70000", "offset 2", "65535"});
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(gossamer::testing::temporaries_in(dir.path()), std::vector<std::string>{});
  expect_error([&] { write_shard(path, tokens, 3); }, {path, "version 3"});
  const std::string nodir = dir.file("no/such/dir/x.bin");
  expect_error([&] { write_shard(nodir, tokens); }, {nodir, "No such file or directory"});
}

TEST(Shard, OverwriteIsAtomicReplace) {
  TempDir dir;
  const std::string path = dir.file("s.bin");
  write_shard(path, std::vector<uint32_t>{1, 2, 3});
  write_shard(path, std::vector<uint32_t>{4, 5});
  EXPECT_EQ(read_all(ShardReader(path)), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(gossamer::testing::temporaries_in(dir.path()), std::vector<std::string>{});
}

TEST(Shard, ReadOutOfRange) {
  TempDir dir;
  const std::string path = dir.file("s.bin");
  write_shard(path, std::vector<uint32_t>{1, 2, 3, 4});
  ShardReader r(path);
  std::vector<int32_t> out(2);
  r.read(2, out);
  EXPECT_EQ(out, (std::vector<int32_t>{3, 4}));
  expect_error([&] { r.read(3, out); }, {path, "out of range", "[3, 5)", "4 tokens"});
  expect_error([&] { r.read(~uint64_t{0}, out); }, {path, "out of range"});
}

TEST(Shard, MoveKeepsMapping) {
  TempDir dir;
  const std::string path = dir.file("s.bin");
  write_shard(path, std::vector<uint32_t>{9, 8, 7});
  ShardReader a(path);
  ShardReader b(std::move(a));
  EXPECT_EQ(read_all(b), (std::vector<int32_t>{9, 8, 7}));
  ShardReader c(path);
  c = std::move(b);
  EXPECT_EQ(read_all(c), (std::vector<int32_t>{9, 8, 7}));
}

TEST(Shard, Corruption) {
  TempDir dir;
  const std::string p = dir.file("corrupt.bin");

  {
    std::ofstream f(p, std::ios::binary);
    f.write("0123456789", 10);
  }
  expect_error([&] { ShardReader r(p); }, {p, "truncated header", "10 bytes"});

  write_raw(p, 12345, 1, 0, 0);
  expect_error([&] { ShardReader r(p); }, {p, "bad magic", "expected 20240520", "found 12345"});

  write_raw(p, kShardMagic, 3, 0, 0);
  expect_error([&] { ShardReader r(p); }, {p, "version", "found 3"});

  write_raw(p, kShardMagic, 1, -5, 0);
  expect_error([&] { ShardReader r(p); }, {p, "token count", "found -5"});

  write_raw(p, kShardMagic, 1, 10, 18);  // needs 20 bytes
  expect_error([&] { ShardReader r(p); }, {p, "truncated shard", "1042", "1044"});

  write_raw(p, kShardMagic, 2, 10, 36);  // needs 40 bytes
  expect_error([&] { ShardReader r(p); }, {p, "truncated shard", "1060", "1064"});

  write_raw(p, kShardMagic, 1, 10, 22);
  expect_error([&] { ShardReader r(p); }, {p, "trailing bytes", "1046", "1044"});

  const std::string missing = dir.file("missing.bin");
  expect_error([&] { ShardReader r(missing); }, {missing, "cannot open", "No such file"});

  expect_error([&] { ShardReader r(dir.path()); }, {dir.path(), "not a regular file"});
}

// ---- loader -------------------------------------------------------------------------------

constexpr int kT = 8;

// Three shards of different lengths; tokens are global indices. With T = 8 they hold
// 12 + 7 + 29 = 48 windows; the first shard has an unused tail of 3 tokens.
class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<uint64_t> lengths = {100, 57, 233};
    uint32_t base = 0;
    for (size_t s = 0; s < lengths.size(); ++s) {
      std::vector<uint32_t> tokens(lengths[s]);
      for (uint64_t i = 0; i < lengths[s]; ++i) tokens[i] = base + static_cast<uint32_t>(i);
      const std::string path = dir_.file("shard_" + std::to_string(s) + ".bin");
      write_shard(path, tokens);
      paths_.push_back(path);
      // Independent expectation of the window starts: local k*T with k*T + T <= len - 1.
      for (uint64_t k = 0; k * kT + kT <= lengths[s] - 1; ++k) {
        starts_.push_back(base + static_cast<int32_t>(k * kT));
      }
      base += static_cast<uint32_t>(lengths[s]);
    }
  }

  DataLoader make(uint64_t seed = 1, bool shuffle = true, uint32_t vocab = 1000) const {
    return DataLoader(paths_, kT, seed, shuffle, vocab);
  }

  // One next_batch call; checks that every row is a contiguous window with targets shifted
  // by one and returns the rows' first tokens (their window ids).
  static std::vector<int32_t> batch(DataLoader& dl, int rank, int world, int B) {
    std::vector<int32_t> in(static_cast<size_t>(B) * kT, -1), tg(static_cast<size_t>(B) * kT, -1);
    dl.next_batch(rank, world, B, in.data(), tg.data());
    std::vector<int32_t> firsts;
    for (int b = 0; b < B; ++b) {
      const int32_t* x = &in[static_cast<size_t>(b) * kT];
      const int32_t* y = &tg[static_cast<size_t>(b) * kT];
      for (int t = 0; t < kT; ++t) {
        EXPECT_EQ(x[t], x[0] + t);
        EXPECT_EQ(y[t], x[t] + 1);
      }
      firsts.push_back(x[0]);
    }
    return firsts;
  }

  // `steps` steps of a job of `world` ranks (one loader each, as in a real job), starting at
  // `pos`; returns the global stream (ranks concatenated in rank order, step after step).
  std::vector<int32_t> stream(int world, int B, int steps, uint64_t seed = 1,
                              LoaderPosition pos = {}) const {
    std::vector<DataLoader> ranks;
    for (int r = 0; r < world; ++r) {
      ranks.push_back(make(seed));
      ranks.back().set_position(pos);
    }
    std::vector<int32_t> out;
    for (int s = 0; s < steps; ++s) {
      for (int r = 0; r < world; ++r) {
        const std::vector<int32_t> f = batch(ranks[r], r, world, B);
        out.insert(out.end(), f.begin(), f.end());
      }
    }
    return out;
  }

  TempDir dir_;
  std::vector<std::string> paths_;
  std::vector<int32_t> starts_;  // all window ids, in file order
};

std::vector<int32_t> sorted(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_F(LoaderTest, WindowLayoutInFileOrder) {
  ASSERT_EQ(starts_.size(), 48u);
  DataLoader dl = make(1, /*shuffle=*/false);
  EXPECT_EQ(dl.num_windows(), 48u);
  EXPECT_EQ(dl.seq_len(), kT);
  std::vector<int32_t> seen;
  for (size_t i = 0; i < starts_.size(); ++i) {
    const std::vector<int32_t> f = batch(dl, 0, 1, 1);
    seen.push_back(f[0]);
  }
  // Exactly the expected windows, in file order: starts at multiples of T within each shard
  // (shard 1 starts at token 100, shard 2 at 157) and never past a shard's last token.
  EXPECT_EQ(seen, starts_);
  EXPECT_EQ(seen[11], 88);   // last window of shard 0: tokens 88..96 (97..99 unused)
  EXPECT_EQ(seen[12], 100);  // first window of shard 1
  EXPECT_EQ(seen[18], 148);  // last window of shard 1: tokens 148..156 = its last token
  EXPECT_EQ(seen[19], 157);
  EXPECT_EQ(dl.position().epoch, 1u);
  EXPECT_EQ(dl.position().cursor, 0u);
  // The next epoch repeats the file order.
  EXPECT_EQ(batch(dl, 0, 1, 3), (std::vector<int32_t>{0, 8, 16}));
}

TEST_F(LoaderTest, ShortShardsHaveNoWindows) {
  // T = 8: 5 and 8 tokens hold no window of 9 tokens, 9 tokens hold exactly one.
  std::vector<std::string> paths;
  uint32_t base = 0;
  for (uint32_t len : {5u, 8u, 9u, 0u}) {
    std::vector<uint32_t> tokens(len);
    for (uint32_t i = 0; i < len; ++i) tokens[i] = base + i;
    paths.push_back(dir_.file("short_" + std::to_string(len) + ".bin"));
    write_shard(paths.back(), tokens);
    base += len;
  }
  DataLoader dl(paths, kT, 0, false, 1000);
  EXPECT_EQ(dl.num_windows(), 1u);
  EXPECT_EQ(batch(dl, 0, 1, 1), (std::vector<int32_t>{13}));
  expect_error(
      [&] {
        DataLoader d({paths[0], paths[1]}, kT, 0, false, 1000);
      },
      {"no window", paths[0]});
}

TEST_F(LoaderTest, ShuffledEpochVisitsEveryWindowOnce) {
  const std::vector<int32_t> a = stream(1, 1, 48, /*seed=*/7);
  EXPECT_EQ(sorted(a), starts_);
  EXPECT_NE(a, starts_);              // shuffled
  EXPECT_EQ(stream(1, 1, 48, 7), a);  // same seed, same order
  const std::vector<int32_t> b = stream(1, 1, 48, 8);
  EXPECT_EQ(sorted(b), starts_);
  EXPECT_NE(b, a);  // different seed, different order
  // The second epoch is another permutation of the same windows.
  const std::vector<int32_t> two = stream(1, 1, 96, 7);
  const std::vector<int32_t> second(two.begin() + 48, two.end());
  EXPECT_EQ(std::vector<int32_t>(two.begin(), two.begin() + 48), a);
  EXPECT_EQ(sorted(second), starts_);
  EXPECT_NE(second, a);
}

TEST_F(LoaderTest, RanksAreDisjointAndCoverTheEpoch) {
  const int world = 4, B = 3;  // 12 windows per step, 4 steps per epoch
  std::vector<DataLoader> ranks;
  for (int r = 0; r < world; ++r) ranks.push_back(make(3));
  std::vector<int32_t> epoch;
  for (int step = 0; step < 4; ++step) {
    std::set<int32_t> in_step;
    for (int r = 0; r < world; ++r) {
      for (int32_t w : batch(ranks[r], r, world, B)) {
        EXPECT_TRUE(in_step.insert(w).second) << "window " << w << " served twice in a step";
        epoch.push_back(w);
      }
    }
  }
  EXPECT_EQ(sorted(epoch), starts_);
  for (const DataLoader& dl : ranks) {
    EXPECT_EQ(dl.position().epoch, 1u);
    EXPECT_EQ(dl.position().cursor, 0u);
  }
}

TEST_F(LoaderTest, GlobalStreamIndependentOfWorldSize) {
  const std::vector<int32_t> one = stream(1, 8, 12);  // 96 windows = 2 epochs
  EXPECT_EQ(stream(4, 2, 12), one);
  EXPECT_EQ(stream(2, 4, 12), one);
  EXPECT_EQ(stream(1, 1, 96), one);
}

TEST_F(LoaderTest, EpochRolloverMidBatch) {
  const std::vector<int32_t> ref = stream(1, 1, 96, 5);  // two epochs, one window at a time
  // world 1, B = 10: the fifth batch takes windows 40..47 of epoch 0 and 0..1 of epoch 1.
  DataLoader dl = make(5);
  std::vector<int32_t> got;
  for (int i = 0; i < 5; ++i) {
    const std::vector<int32_t> f = batch(dl, 0, 1, 10);
    got.insert(got.end(), f.begin(), f.end());
  }
  EXPECT_EQ(dl.position().epoch, 1u);
  EXPECT_EQ(dl.position().cursor, 2u);
  EXPECT_EQ(got, std::vector<int32_t>(ref.begin(), ref.begin() + 50));
  EXPECT_EQ(sorted(std::vector<int32_t>(got.begin(), got.begin() + 48)), starts_);
  // world 3, B = 3: at cursor 45 rank 0 ends epoch 0, ranks 1 and 2 are wholly in epoch 1.
  EXPECT_EQ(stream(3, 3, 10, 5), std::vector<int32_t>(ref.begin(), ref.begin() + 90));
}

TEST_F(LoaderTest, ResumeSameWorldSize) {
  const int world = 2, B = 3;
  std::vector<DataLoader> ref, resumed;
  for (int r = 0; r < world; ++r) ref.push_back(make(11));
  for (int step = 0; step < 5; ++step) {
    for (int r = 0; r < world; ++r) batch(ref[r], r, world, B);
  }
  const LoaderPosition saved = ref[0].position();
  EXPECT_EQ(saved.epoch, 0u);
  EXPECT_EQ(saved.cursor, 30u);
  for (int r = 0; r < world; ++r) {
    resumed.push_back(make(11));
    resumed.back().set_position(saved);
  }
  for (int step = 5; step < 20; ++step) {  // crosses two epoch boundaries
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(batch(resumed[r], r, world, B), batch(ref[r], r, world, B)) << "step " << step;
    }
  }
  EXPECT_EQ(resumed[1].position().epoch, ref[1].position().epoch);
  EXPECT_EQ(resumed[1].position().cursor, ref[1].position().cursor);
}

TEST_F(LoaderTest, ResumeAtDifferentWorldSize) {
  // Uninterrupted: world 2, B = 3 for 20 steps (120 windows, 2.5 epochs), saved after 5.
  const std::vector<int32_t> ref = stream(2, 3, 20, 11);
  const LoaderPosition saved{0, 30};
  const std::vector<int32_t> rest(ref.begin() + 30, ref.end());
  EXPECT_EQ(stream(1, 6, 15, 11, saved), rest);
  EXPECT_EQ(stream(1, 5, 18, 11, saved), rest);
  const std::vector<int32_t> at4 = stream(4, 3, 7, 11, saved);  // 84 windows
  EXPECT_EQ(at4, std::vector<int32_t>(rest.begin(), rest.begin() + 84));
  // A position saved mid-second-epoch also resumes exactly.
  const std::vector<int32_t> later = stream(4, 1, 10, 11, LoaderPosition{1, 12});
  EXPECT_EQ(later, std::vector<int32_t>(ref.begin() + 60, ref.begin() + 100));
}

TEST_F(LoaderTest, SetPosition) {
  DataLoader dl = make();
  expect_error([&] { dl.set_position({0, 49}); }, {"cursor 49", "48 windows"});
  dl.set_position({2, 48});  // a fully consumed epoch is the start of the next
  EXPECT_EQ(dl.position().epoch, 3u);
  EXPECT_EQ(dl.position().cursor, 0u);
}

TEST_F(LoaderTest, VocabLimitViolationNamesShardAndOffsetWhenOpened) {
  // Every token is checked when the loader opens the shards, not when its window comes up
  // (a run must fail before it writes anything). Shard 1 holds tokens 100..156.
  expect_error([&] { make(1, /*shuffle=*/false, /*vocab=*/148); },
               {paths_[1], "token 148", "offset 48", "< 148"});
  expect_error([&] { make(1, false, 120); }, {paths_[1], "token 120", "offset 20"});
  expect_error([&] { make(1, false, 57); }, {paths_[0], "token 57", "offset 57"});
  EXPECT_NO_THROW(make(1, false, 390));  // the largest token is 389
  // uint32 shards: tokens beyond 2^31 are caught too.
  const std::string big = dir_.file("big.bin");
  write_shard(big, std::vector<uint32_t>{1, 2, 3, 4000000000u, 5, 6, 7, 8, 9, 10},
              kShardVersionU32);
  expect_error([&] { DataLoader({big}, 4, 1, false, 100000); },
               {big, "token 4000000000", "offset 3"});
}

TEST_F(LoaderTest, ShardVerdictCacheIsUsedAndInvalidated) {
  // The first open scans and leaves ".NAME.max_token" (size, mtime, max) next to the shard.
  make(1, false, 1000);
  const std::string cache = dir_.file(".shard_1.bin.max_token");
  std::ifstream in(cache);
  unsigned long long size = 0, mtime = 0, max = 0;
  ASSERT_TRUE(in >> size >> mtime >> max) << cache;
  EXPECT_EQ(max, 156u);
  EXPECT_EQ(size, fs::file_size(paths_[1]));
  in.close();
  // A cache that matches the file is believed: a (forged) max above the limit makes the loader
  // look for the token, find none and say the cache is stale.
  { std::ofstream(cache) << size << " " << mtime << " 5000\n"; }
  expect_error([&] { make(1, false, 1000); }, {paths_[1], "verdict cache", "stale"});
  // Rewriting the shard changes its size and mtime: the cache is ignored and redone.
  std::vector<uint32_t> tokens(56);
  for (uint32_t i = 0; i < 56; ++i) tokens[i] = 100 + i;
  write_shard(paths_[1], tokens);
  EXPECT_NO_THROW(make(1, false, 1000));
  std::ifstream again(cache);
  ASSERT_TRUE(again >> size >> mtime >> max);
  EXPECT_EQ(max, 155u);
}

TEST_F(LoaderTest, ArgumentErrors) {
  DataLoader dl = make();
  std::vector<int32_t> buf(64 * kT);
  expect_error([&] { dl.next_batch(0, 4, 13, buf.data(), buf.data() + 13 * kT); },
               {"4*13 = 52", "only 48 windows"});
  expect_error([&] { dl.next_batch(4, 4, 1, buf.data(), buf.data() + kT); }, {"rank 4"});
  expect_error([&] { dl.next_batch(0, 1, 0, buf.data(), buf.data()); }, {"B must be"});
  EXPECT_EQ(dl.position().cursor, 0u);  // failed calls consume nothing
  // world*B == all windows is allowed.
  dl.next_batch(0, 4, 12, buf.data(), buf.data() + 12 * kT);
  EXPECT_EQ(dl.position().epoch, 1u);

  expect_error([&] { DataLoader d(paths_, 0, 0, true, 1000); }, {"T must be"});
  expect_error([&] { DataLoader d({}, kT, 0, true, 1000); }, {"no shard files"});
  const std::string bad = dir_.file("bad.bin");
  write_raw(bad, 1, 1, 0, 0);
  expect_error([&] { DataLoader d({paths_[0], bad}, kT, 0, true, 1000); }, {bad, "bad magic"});
}

// ---- patterns -----------------------------------------------------------------------------

TEST(ShardPatterns, GlobCommaListsSortingAndErrors) {
  TempDir dir;
  for (const char* name : {"train_002.bin", "train_000.bin", "val_000.bin", "train_001.bin"}) {
    write_shard(dir.file(name), std::vector<uint32_t>{1});
  }
  const std::string d = dir.path();
  const std::vector<std::string> train = {d + "/train_000.bin", d + "/train_001.bin",
                                          d + "/train_002.bin"};
  EXPECT_EQ(expand_shard_patterns(d + "/train_*.bin"), train);
  EXPECT_EQ(
      expand_shard_patterns(d + "/val_000.bin, " + d + "/train_00[01].bin"),
      (std::vector<std::string>{d + "/train_000.bin", d + "/train_001.bin", d + "/val_000.bin"}));
  // Overlapping patterns are de-duplicated; empty list items are ignored.
  EXPECT_EQ(
      expand_shard_patterns(d + "/train_*.bin," + d + "/train_000.bin,," + d + "/train_00?.bin,"),
      train);
  expect_error([&] { expand_shard_patterns(d + "/train_*.bin," + d + "/nope_*.bin"); },
               {d + "/nope_*.bin", "matches no file"});
  expect_error([&] { expand_shard_patterns(d + "/missing.bin"); }, {d + "/missing.bin"});
  expect_error([&] { expand_shard_patterns(""); }, {"no shard files"});
  expect_error([&] { expand_shard_patterns(" , "); }, {"no shard files"});
  expect_error([&] { expand_shard_patterns(d + "/missing_dir/train_*.bin"); },
               {"directory " + d + "/missing_dir: No such file or directory"});
}

// Byte sequences from Unicode's table of maximal subparts (one U+FFFD each) and clean text.
TEST(TextCheck, CountsInvalidUtf8AndControlBytes) {
  auto scan = [](const std::string& s) { return scan_text(s.data(), s.size()); };
  const TextScan clean = scan("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\tok\r\n\f");
  EXPECT_EQ(clean.invalid_sequences, 0u);
  EXPECT_EQ(clean.control_bytes, 0u);
  EXPECT_EQ(clean.non_text_fraction(), 0.0);
  struct Case {
    std::string bytes;
    uint64_t invalid, first;
  };
  const Case cases[] = {
      {"a\x80"
       "b",
       1, 1},                      // lone continuation
      {"\xC0\xAF", 2, 0},          // overlong lead C0, then a lone continuation
      {"\xE0\x80\x80", 3, 0},      // E0 needs A0..BF next
      {"\xED\xA0\x80", 3, 0},      // a surrogate
      {"\xF4\x90\x80\x80", 4, 0},  // above U+10FFFF
      {"ab\xE2\x82", 1, 2},        // truncated at the end
      {"\xE2\x82x", 1, 0},         // truncated before an ASCII byte
      {"\xF5\xFF", 2, 0},          // never valid
  };
  for (const Case& c : cases) {
    const TextScan t = scan(c.bytes);
    EXPECT_EQ(t.invalid_sequences, c.invalid) << ::testing::PrintToString(c.bytes);
    EXPECT_EQ(t.first_invalid_offset, c.first) << ::testing::PrintToString(c.bytes);
  }
  const std::string nul("a\0b\x01\x7f", 5);
  EXPECT_EQ(scan(nul).control_bytes, 3u);
  EXPECT_DOUBLE_EQ(scan(nul).non_text_fraction(), 0.6);
}

TEST(TextCheck, FileScanEqualsInMemoryScanAcrossChunks) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 300000; ++i) text += "d\xC3\xA9j\xC3\xA0 vu \xE2\x82\xAC ";
  text += "\xC3";                        // a sequence cut at the very end
  text.insert(size_t(1) << 20, "\x80");  // a stray byte near the first chunk boundary
  const std::string path = dir.file("text.txt");
  std::ofstream(path, std::ios::binary) << text;
  const TextScan f = scan_text_file(path), m = scan_text(text.data(), text.size());
  EXPECT_EQ(f.bytes, text.size());
  EXPECT_EQ(f.invalid_sequences, m.invalid_sequences);
  EXPECT_EQ(f.first_invalid_offset, m.first_invalid_offset);
  EXPECT_GE(f.invalid_sequences, 2u);
  expect_error([&] { scan_text_file(dir.file("missing.txt")); }, {"missing.txt: cannot open"});
}

}  // namespace
}  // namespace gossamer::data
