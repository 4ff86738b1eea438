// Host views of a model's parameters, for the code that reads or writes them on the host
// (checkpoints, Hugging Face import and export, the replica check). On host memory (the CPU
// backend) a view is the parameters themselves, with no copy; on device memory it is a host
// copy: read back when the view is made, written back by commit().
// Invariant: a HostParamsEdit's changes reach the model only through commit() on device memory,
// and at once on host memory; so callers always commit() after writing (checked on destruction).
#pragma once

#include <span>

#include "core/buffer.h"
#include "model/model.h"

namespace gossamer::model {

class HostParamsView {
 public:
  explicit HostParamsView(const Model& model);
  std::span<const float> span() const { return view_; }

 private:
  HostBuffer<float> copy_;  // device memory only
  std::span<const float> view_;
};

class HostParamsEdit {
 public:
  // read_first: false when every value will be overwritten before commit().
  HostParamsEdit(Model& model, bool read_first);
  // An edit that was neither committed nor left by an exception is a bug that the CPU would
  // hide (its edits land in place): it aborts with a message, on every backend.
  ~HostParamsEdit();
  HostParamsEdit(const HostParamsEdit&) = delete;
  HostParamsEdit& operator=(const HostParamsEdit&) = delete;
  std::span<float> span() { return view_; }
  void commit();

 private:
  Model& model_;
  HostBuffer<float> copy_;  // device memory only
  std::span<float> view_;
  bool committed_ = false;
  int exceptions_at_start_;
};

}  // namespace gossamer::model
