// The fraction of each parameter tensor a sparse mask selects (SCAPE's
// optimizer.scape.log_selection_by_tensor): one figure per view of the layout, for comparing how
// a per-shard top-k spreads its budget over the tensors with how a global top-k does.
// Invariant: the fractions are counts of mask entries inside each view divided by its size; a
// mask entry outside the layout is an error.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/param_layout.h"

namespace gossamer::optim {

// ("selected_fraction.<view name>", fraction) for every view, in layout order. The mask holds
// flat indices in any order, each at most once.
std::vector<std::pair<std::string, double>> selection_by_tensor(const model::ParamLayout& layout,
                                                                std::span<const uint32_t> mask);

}  // namespace gossamer::optim
