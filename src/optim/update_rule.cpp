// The weight-decay runs of an owned shard (see update_rule.h), shared by the dense rules and
// SCAPE.
#include "optim/update_rule.h"

#include <algorithm>

namespace gossamer::optim {

std::vector<OwnedRun> owned_runs(const model::ParamLayout& layout, const OwnedShard& own) {
  std::vector<OwnedRun> runs;
  for (const ShardPiece& p : own.pieces) {
    const size_t first = runs.size();  // runs never continue across pieces
    for (const model::ParamView& view : layout.views()) {
      const size_t lo = std::max(p.begin, view.offset);
      const size_t hi = std::min(p.end, view.offset + view.numel);
      if (lo >= hi) continue;
      const bool decay = view.kind == model::ParamKind::PARAM_KIND_WEIGHT;
      if (runs.size() > first && runs.back().decay == decay &&
          runs.back().begin + runs.back().n == lo)
        runs.back().n += hi - lo;
      else
        runs.push_back({lo, p.local + (lo - p.begin), hi - lo, decay});
    }
  }
  return runs;
}

}  // namespace gossamer::optim
