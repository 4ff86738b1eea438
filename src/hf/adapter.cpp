// make_hf_adapter (the family's table from hf_family.h, checked against our layout) and the
// tensor transforms. The tables compute HF shapes from the config with HF's semantics,
// independently of our layout, and make_hf_adapter() checks that every transform maps our
// shape onto them.
#include "hf/adapter.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.h"

namespace gossamer::hf {

namespace {

using T = HfTransform;

void transpose(const float* src, int64_t rows, int64_t cols, float* dst) {  // dst = src^T
  constexpr int64_t kBlock = 64;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
      for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r)
        for (int64_t c = c0; c < std::min(cols, c0 + kBlock); ++c)
          dst[c * rows + r] = src[r * cols + c];
}

bool maps_onto(T t, const io::Shape& ours, const io::Shape& hf) {
  switch (t) {
    case T::HF_TRANSFORM_IDENTITY:
      return ours == hf;
    case T::HF_TRANSFORM_TRANSPOSE:
      return ours.size() == 2 && hf.size() == 2 && ours[0] == hf[1] && ours[1] == hf[0];
    case T::HF_TRANSFORM_VOCAB_ROWS:
      return ours.size() == 2 && hf.size() == 2 && ours[0] >= hf[0] && ours[1] == hf[1];
  }
  return false;
}

}  // namespace

const char* hf_transform_name(HfTransform t) {
  switch (t) {
    case T::HF_TRANSFORM_IDENTITY:
      return "identity";
    case T::HF_TRANSFORM_TRANSPOSE:
      return "transpose";
    case T::HF_TRANSFORM_VOCAB_ROWS:
      return "vocab-rows";
  }
  return "?";
}

bool HfAdapter::is_ignored_buffer(const std::string& n) const {
  for (const std::string& suffix : family->ignored_buffer_suffixes)
    if (n.ends_with(suffix)) return true;
  return false;
}

HfAdapter make_hf_adapter(const model::ModelConfig& config, const model::ParamLayout& layout) {
  HfAdapter a;
  a.family = &hf_family(config.family);
  a.family->add_tensors(config, a);
  const char* type = a.family->model_type.c_str();
  std::set<std::string> seen;
  for (const HfTensorMap& m : a.tensors) {
    GOSSAMER_CHECK(layout.contains(m.ours),
                   "HF adapter for %s: parameter %s (-> %s) is not in the model's layout", type,
                   m.ours.c_str(), m.hf.c_str());
    GOSSAMER_CHECK(seen.insert(m.ours).second, "HF adapter for %s: parameter %s mapped twice", type,
                   m.ours.c_str());
    const model::ParamView& v = layout.find(m.ours);
    GOSSAMER_CHECK(maps_onto(m.transform, v.shape, m.hf_shape),
                   "HF adapter for %s: %s %s does not map onto %s %s by %s", type, m.ours.c_str(),
                   io::shape_to_string(v.shape).c_str(), m.hf.c_str(),
                   io::shape_to_string(m.hf_shape).c_str(), hf_transform_name(m.transform));
  }
  for (const model::ParamView& v : layout.views())
    GOSSAMER_CHECK(seen.count(v.name), "HF adapter for %s: parameter %s has no HF name", type,
                   v.name.c_str());
  return a;
}

const float* hf_tensor_from_ours(const HfTensorMap& m, const model::ParamView& view,
                                 const float* params, std::vector<float>& scratch) {
  const float* src = params + view.offset;
  if (m.transform != T::HF_TRANSFORM_TRANSPOSE) return src;  // identity, or a prefix of rows
  scratch.resize(view.numel);
  transpose(src, view.shape[0], view.shape[1], scratch.data());
  return scratch.data();
}

void hf_tensor_to_ours(const HfTensorMap& m, const model::ParamView& view, const float* hf,
                       float* params) {
  float* dst = params + view.offset;
  switch (m.transform) {
    case T::HF_TRANSFORM_IDENTITY:
      std::memcpy(dst, hf, view.numel * sizeof(float));
      break;
    case T::HF_TRANSFORM_TRANSPOSE:
      transpose(hf, m.hf_shape[0], m.hf_shape[1], dst);
      break;
    case T::HF_TRANSFORM_VOCAB_ROWS: {
      const size_t n = size_t(io::shape_numel(m.hf_shape));
      std::memcpy(dst, hf, n * sizeof(float));
      std::memset(dst + n, 0, (view.numel - n) * sizeof(float));
      break;
    }
  }
}

}  // namespace gossamer::hf
