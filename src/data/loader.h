// DataLoader: serves (B, T+1)-token windows from a set of shards to the ranks of a job.
// The corpus is cut into windows of T+1 tokens starting at multiples of T inside each shard
// (consecutive windows share one token; no window crosses a shard boundary; a shard's tail
// shorter than T+1 tokens is unused). Every epoch visits every window once, in an order
// shuffled from (seed, epoch) (or in file order when shuffle is off).
// Invariant: the position is GLOBAL (how many windows of the stream the whole job has
// consumed), so each call of next_batch by every rank consumes world*B windows, rank r takes
// windows [r*B, (r+1)*B) of them; ranks see disjoint windows, and a position saved at one
// world size resumes at another on exactly the next windows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/shard.h"

namespace gossamer::data {

struct LoaderPosition {
  uint64_t epoch = 0;   // completed passes over all windows
  uint64_t cursor = 0;  // windows consumed in the current epoch
};

// Expands a comma-separated list of files and glob patterns into a sorted, de-duplicated
// list of paths; throws naming the pattern when a pattern matches nothing.
std::vector<std::string> expand_shard_patterns(const std::string& patterns);

class DataLoader {
 public:
  // vocab_limit: every token of every shard must be < vocab_limit, checked here when the shards
  // are opened (the error names the shard and the token's offset).
  DataLoader(const std::vector<std::string>& shard_paths, int T, uint64_t seed, bool shuffle,
             uint32_t vocab_limit);

  uint64_t num_windows() const;
  int seq_len() const { return T_; }

  // Fills inputs (B,T) and targets (B,T) (targets = inputs shifted by one) for this rank.
  // Every rank must call it once per step with the same world and B. When fewer than world*B
  // windows are left in the epoch, the step takes them and continues with the first windows
  // of the next epoch's order. Throws if world*B > num_windows().
  void next_batch(int rank, int world, int B, int32_t* inputs, int32_t* targets);

  LoaderPosition position() const { return pos_; }
  void set_position(const LoaderPosition& pos);  // throws if the cursor is beyond the epoch

 private:
  // ... implementation-defined members
  struct Impl;
  std::shared_ptr<Impl> impl_;
  int T_ = 0;
  LoaderPosition pos_;
};

}  // namespace gossamer::data
