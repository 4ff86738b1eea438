// Host views of a model's parameters (see host_params.h).
#include "model/host_params.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace gossamer::model {

HostParamsView::HostParamsView(const Model& model) {
  const std::span<const float> p = model.params();
  if (model.memory().host_accessible) {
    view_ = p;
    return;
  }
  copy_ = HostBuffer<float>(p.size());
  model.memory().download(copy_.data(), p.data(), p.size_bytes());
  view_ = copy_.span();
}

HostParamsEdit::HostParamsEdit(Model& model, bool read_first)
    : model_(model), exceptions_at_start_(std::uncaught_exceptions()) {
  const std::span<float> p = model.params();
  if (model.memory().host_accessible) {
    view_ = p;
    return;
  }
  copy_ = HostBuffer<float>(p.size());
  if (read_first) model.memory().download(copy_.data(), p.data(), p.size_bytes());
  view_ = copy_.span();
}

HostParamsEdit::~HostParamsEdit() {
  if (committed_ || std::uncaught_exceptions() > exceptions_at_start_) return;
  std::fprintf(stderr, "HostParamsEdit: parameters edited on the host and never committed\n");
  std::abort();
}

void HostParamsEdit::commit() {
  committed_ = true;
  if (copy_.size() == 0) return;  // host memory: written in place
  model_.memory().upload(model_.params().data(), copy_.data(), copy_.size() * sizeof(float));
}

}  // namespace gossamer::model
