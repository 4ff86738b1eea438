// DataLoader (loader.h). The windows of all shards form one global list: window w lives in
// shard s = the last s with window_start[s] <= w, at token offset (w - window_start[s]) * T.
// Epoch e visits the global list in the order perm_e, a Fisher-Yates permutation drawn from
// Rng(seed, e) with Rng::below only, so the order is the same on every platform and depends
// on nothing but (seed, e, number of windows). Only the current epoch's permutation is kept;
// it is rebuilt (from the identity) whenever a batch needs another epoch's order.
// Epoch rollover: a step consumes world*B consecutive windows of the stream; when the epoch
// has fewer left, the step takes them and continues with the first windows of the next
// epoch's order (so no window is skipped and none is served twice within an epoch).
#include "data/loader.h"

#include <glob.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>

#include "core/error.h"
#include "core/rng.h"

namespace gossamer::data {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

template <class Index>
void fisher_yates(std::vector<Index>& perm, uint64_t n, Rng& rng) {
  perm.resize(n);
  std::iota(perm.begin(), perm.end(), Index{0});
  for (uint64_t i = n; i > 1; --i) {
    const uint64_t j = rng.below(i);  // uniform in [0, i)
    std::swap(perm[i - 1], perm[j]);
  }
}

// The first directory glob() could not read and why (glob's error callback takes no context).
thread_local std::string glob_error_path;
thread_local int glob_error_errno = 0;
int remember_glob_error(const char* path, int err) {
  if (glob_error_path.empty()) {
    glob_error_path = path;
    glob_error_errno = err;
  }
  return 1;  // stop: a directory that cannot be read is an error, not an empty match
}

}  // namespace

std::vector<std::string> expand_shard_patterns(const std::string& patterns) {
  std::vector<std::string> paths;
  size_t num_patterns = 0;
  size_t begin = 0;
  while (begin <= patterns.size()) {
    size_t end = patterns.find(',', begin);
    if (end == std::string::npos) end = patterns.size();
    const std::string pattern = trim(patterns.substr(begin, end - begin));
    begin = end + 1;
    if (pattern.empty()) continue;
    ++num_patterns;
    glob_t g{};
    glob_error_path.clear();
    const int rc = ::glob(pattern.c_str(), GLOB_ERR, remember_glob_error, &g);
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
    if (rc == GLOB_NOMATCH) fail("shard pattern '%s' matches no file", pattern.c_str());
    if (rc == GLOB_ABORTED && !glob_error_path.empty()) {
      fail("shard pattern '%s': directory %s: %s", pattern.c_str(), glob_error_path.c_str(),
           std::strerror(glob_error_errno));
    }
    if (rc != 0) {
      fail("shard pattern '%s': %s", pattern.c_str(),
           rc == GLOB_NOSPACE ? "out of memory" : "read error while expanding it");
    }
  }
  GOSSAMER_CHECK(num_patterns > 0, "no shard files given (empty pattern list '%s')",
                 patterns.c_str());
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

struct DataLoader::Impl {
  std::vector<ShardReader> shards;
  std::vector<uint64_t> window_start;  // (num shards + 1) prefix sums of windows per shard
  uint64_t num_windows = 0;
  uint64_t seed = 0;
  bool shuffle = false;
  // The permutation of epoch perm_epoch (only one of the two is used: uint32 when it fits).
  bool have_perm = false;
  uint64_t perm_epoch = 0;
  std::vector<uint32_t> perm32;
  std::vector<uint64_t> perm64;

  // The window at position i of epoch `epoch`'s order.
  uint64_t window_at(uint64_t epoch, uint64_t i) {
    if (!shuffle) return i;
    if (!have_perm || perm_epoch != epoch) {
      Rng rng(seed, epoch);
      if (num_windows <= std::numeric_limits<uint32_t>::max()) {
        fisher_yates(perm32, num_windows, rng);
      } else {
        fisher_yates(perm64, num_windows, rng);
      }
      have_perm = true;
      perm_epoch = epoch;
    }
    return perm32.empty() ? perm64[i] : perm32[i];
  }

  // Copies window w into one row of inputs (T) and targets (T).
  void read_window(uint64_t w, int T, int32_t* inputs, int32_t* targets) const {
    const size_t s =
        std::upper_bound(window_start.begin(), window_start.end(), w) - window_start.begin() - 1;
    const ShardReader& shard = shards[s];
    const uint64_t offset = (w - window_start[s]) * static_cast<uint64_t>(T);
    shard.read(offset, std::span<int32_t>(inputs, T));
    shard.read(offset + 1, std::span<int32_t>(targets, T));
  }
};

DataLoader::DataLoader(const std::vector<std::string>& shard_paths, int T, uint64_t seed,
                       bool shuffle, uint32_t vocab_limit)
    : impl_(std::make_shared<Impl>()), T_(T) {
  GOSSAMER_CHECK(T >= 1, "data loader: sequence length T must be >= 1, found %d", T);
  GOSSAMER_CHECK(vocab_limit >= 1, "data loader: vocab_limit must be >= 1, found %u", vocab_limit);
  GOSSAMER_CHECK(!shard_paths.empty(), "data loader: no shard files given");
  Impl& im = *impl_;
  im.seed = seed;
  im.shuffle = shuffle;
  im.shards.reserve(shard_paths.size());
  im.window_start.reserve(shard_paths.size() + 1);
  im.window_start.push_back(0);
  for (const std::string& path : shard_paths) {
    im.shards.emplace_back(path);
    // Every token is checked here, before a run writes anything (not when its window comes).
    im.shards.back().check_tokens_below(vocab_limit);
    const uint64_t n = im.shards.back().num_tokens();
    // Window k covers tokens [k*T, k*T + T]; it fits when k*T + T <= n - 1.
    const uint64_t windows = n == 0 ? 0 : (n - 1) / static_cast<uint64_t>(T);
    im.window_start.push_back(im.window_start.back() + windows);
  }
  im.num_windows = im.window_start.back();
  GOSSAMER_CHECK(im.num_windows > 0,
                 "data loader: the %zu shard(s) (first: %s) hold no window of T+1 = %d tokens",
                 shard_paths.size(), shard_paths.front().c_str(), T + 1);
}

uint64_t DataLoader::num_windows() const {
  return impl_->num_windows;
}

void DataLoader::next_batch(int rank, int world, int B, int32_t* inputs, int32_t* targets) {
  GOSSAMER_CHECK(world >= 1 && rank >= 0 && rank < world,
                 "data loader: rank %d is not in [0, world size %d)", rank, world);
  GOSSAMER_CHECK(B >= 1, "data loader: batch size B must be >= 1, found %d", B);
  GOSSAMER_CHECK(inputs != nullptr && targets != nullptr, "data loader: null output buffer");
  Impl& im = *impl_;
  const uint64_t n = im.num_windows;
  const uint64_t per_step = static_cast<uint64_t>(world) * static_cast<uint64_t>(B);
  GOSSAMER_CHECK(per_step <= n,
                 "data loader: a step needs world*B = %d*%d = %llu windows, but the shards hold "
                 "only %llu windows of T+1 = %d tokens",
                 world, B, static_cast<unsigned long long>(per_step),
                 static_cast<unsigned long long>(n), T_ + 1);

  // Rank r's rows are stream positions cursor + r*B + b, wrapping into the next epoch.
  uint64_t epoch = pos_.epoch;
  uint64_t i = pos_.cursor + static_cast<uint64_t>(rank) * static_cast<uint64_t>(B);
  if (i >= n) {
    i -= n;
    ++epoch;
  }
  const size_t row = static_cast<size_t>(T_);
  for (int b = 0; b < B; ++b) {
    const uint64_t w = im.window_at(epoch, i);
    im.read_window(w, T_, inputs + b * row, targets + b * row);
    if (++i == n) {
      i = 0;
      ++epoch;
    }
  }

  pos_.cursor += per_step;
  if (pos_.cursor >= n) {
    pos_.cursor -= n;
    ++pos_.epoch;
  }
}

void DataLoader::set_position(const LoaderPosition& pos) {
  const uint64_t n = impl_->num_windows;
  GOSSAMER_CHECK(pos.cursor <= n,
                 "data loader: position cursor %llu is beyond the epoch of %llu windows (were "
                 "the shards or T changed?)",
                 static_cast<unsigned long long>(pos.cursor), static_cast<unsigned long long>(n));
  pos_ = pos;
  if (pos_.cursor == n) {  // a fully consumed epoch is the start of the next one
    pos_.cursor = 0;
    ++pos_.epoch;
  }
}

}  // namespace gossamer::data
