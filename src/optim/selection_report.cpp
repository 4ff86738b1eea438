// selection_by_tensor (see selection_report.h): one binary search over the view offsets per
// mask entry.
#include "optim/selection_report.h"

#include <algorithm>

#include "core/error.h"

namespace gossamer::optim {

std::vector<std::pair<std::string, double>> selection_by_tensor(const model::ParamLayout& layout,
                                                                std::span<const uint32_t> mask) {
  const std::vector<model::ParamView>& views = layout.views();
  // Views sorted by offset (the layout may list them in another order).
  std::vector<size_t> order(views.size());
  for (size_t v = 0; v < views.size(); ++v) order[v] = v;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return views[a].offset < views[b].offset; });
  std::vector<size_t> starts(views.size());
  for (size_t k = 0; k < order.size(); ++k) starts[k] = views[order[k]].offset;
  std::vector<size_t> count(views.size(), 0);
  for (uint32_t i : mask) {
    const auto it = std::upper_bound(starts.begin(), starts.end(), size_t(i));
    GOSSAMER_CHECK(it != starts.begin(), "selection report: index %u before the first tensor", i);
    const size_t v = order[size_t(it - starts.begin()) - 1];
    GOSSAMER_CHECK(i < views[v].offset + views[v].numel,
                   "selection report: index %u outside every tensor", i);
    ++count[v];
  }
  std::vector<std::pair<std::string, double>> out;
  for (size_t v = 0; v < views.size(); ++v)
    out.push_back({"selected_fraction." + views[v].name,
                   views[v].numel ? double(count[v]) / double(views[v].numel) : 0.0});
  return out;
}

}  // namespace gossamer::optim
