// Implementation of ParamLayout.
#include "model/param_layout.h"

#include "core/error.h"

namespace gossamer::model {

const char* param_kind_name(ParamKind kind) {
  switch (kind) {
    case ParamKind::PARAM_KIND_WEIGHT:
      return "weight";
    case ParamKind::PARAM_KIND_BIAS:
      return "bias";
    case ParamKind::PARAM_KIND_NORM:
      return "norm";
    case ParamKind::PARAM_KIND_EMBEDDING:
      return "embedding";
  }
  return "?";
}

size_t ParamLayout::add(const std::string& name, std::vector<int64_t> shape, ParamKind kind) {
  GOSSAMER_CHECK(!contains(name), "parameter layout: duplicate parameter name %s", name.c_str());
  size_t numel = 1;
  for (int64_t d : shape) {
    GOSSAMER_CHECK(d > 0, "parameter layout: %s has a non-positive dimension", name.c_str());
    numel *= static_cast<size_t>(d);
  }
  ParamView v{name, std::move(shape), total_, numel, kind};
  index_[name] = views_.size();
  views_.push_back(std::move(v));
  total_ += numel;
  return total_ - numel;
}

const ParamView& ParamLayout::find(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) fail("model has no parameter named %s", name.c_str());
  return views_[it->second];
}

}  // namespace gossamer::model
