// Host views of a model's parameters (see host_params.h).
#include "model/host_params.h"

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

HostParamsEdit::HostParamsEdit(Model& model, bool read_first) : model_(model) {
  const std::span<float> p = model.params();
  if (model.memory().host_accessible) {
    view_ = p;
    return;
  }
  copy_ = HostBuffer<float>(p.size());
  if (read_first) model.memory().download(copy_.data(), p.data(), p.size_bytes());
  view_ = copy_.span();
}

void HostParamsEdit::commit() {
  if (copy_.size() == 0) return;  // host memory: written in place
  model_.memory().upload(model_.params().data(), copy_.data(), copy_.size() * sizeof(float));
}

}  // namespace gossamer::model
