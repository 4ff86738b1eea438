// The per-architecture name/transform tables of hf_adapter.h and the two tensor transforms.
// HF shapes are computed here from the config with HF's semantics, independently of our
// layout, and make_hf_adapter() checks that every transform maps our shape onto them.
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

HfAdapter gpt2_adapter(const model::ModelConfig& cfg) {
  const int64_t C = cfg.d_model, V = cfg.vocab_size, F = cfg.d_ff_resolved();
  HfAdapter a{"gpt2", "GPT2LMHeadModel", "transformer.", {}, {}};
  auto add = [&](std::string ours, std::string hf, T t, io::Shape s) {
    a.tensors.push_back({std::move(ours), "transformer." + hf, t, std::move(s)});
  };
  add("wte", "wte.weight", T::HF_TRANSFORM_VOCAB_ROWS, {V, C});
  add("wpe", "wpe.weight", T::HF_TRANSFORM_IDENTITY, {cfg.max_seq_len, C});
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string o = "blocks." + std::to_string(l) + ".", h = "h." + std::to_string(l) + ".";
    add(o + "ln1.weight", h + "ln_1.weight", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "ln1.bias", h + "ln_1.bias", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "attn.qkv.weight", h + "attn.c_attn.weight", T::HF_TRANSFORM_TRANSPOSE, {C, 3 * C});
    add(o + "attn.qkv.bias", h + "attn.c_attn.bias", T::HF_TRANSFORM_IDENTITY, {3 * C});
    add(o + "attn.proj.weight", h + "attn.c_proj.weight", T::HF_TRANSFORM_TRANSPOSE, {C, C});
    add(o + "attn.proj.bias", h + "attn.c_proj.bias", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "ln2.weight", h + "ln_2.weight", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "ln2.bias", h + "ln_2.bias", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "mlp.fc.weight", h + "mlp.c_fc.weight", T::HF_TRANSFORM_TRANSPOSE, {C, F});
    add(o + "mlp.fc.bias", h + "mlp.c_fc.bias", T::HF_TRANSFORM_IDENTITY, {F});
    add(o + "mlp.proj.weight", h + "mlp.c_proj.weight", T::HF_TRANSFORM_TRANSPOSE, {F, C});
    add(o + "mlp.proj.bias", h + "mlp.c_proj.bias", T::HF_TRANSFORM_IDENTITY, {C});
  }
  add("ln_f.weight", "ln_f.weight", T::HF_TRANSFORM_IDENTITY, {C});
  add("ln_f.bias", "ln_f.bias", T::HF_TRANSFORM_IDENTITY, {C});
  a.tied.push_back({"lm_head.weight", "transformer.wte.weight"});
  return a;
}

HfAdapter llama_adapter(const model::ModelConfig& cfg) {
  const int64_t C = cfg.d_model, V = cfg.vocab_size, F = cfg.d_ff_resolved();
  const int64_t hs = C / cfg.n_head, q = cfg.n_head * hs, kv = cfg.n_kv_head_resolved() * hs;
  HfAdapter a{"llama", "LlamaForCausalLM", "model.", {}, {}};
  auto add = [&](std::string ours, std::string hf, T t, io::Shape s) {
    a.tensors.push_back({std::move(ours), std::move(hf), t, std::move(s)});
  };
  add("wte", "model.embed_tokens.weight", T::HF_TRANSFORM_VOCAB_ROWS, {V, C});
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string o = "blocks." + std::to_string(l) + ".";
    const std::string h = "model.layers." + std::to_string(l) + ".";
    add(o + "attn_norm.weight", h + "input_layernorm.weight", T::HF_TRANSFORM_IDENTITY, {C});
    add(o + "attn.q.weight", h + "self_attn.q_proj.weight", T::HF_TRANSFORM_IDENTITY, {q, C});
    add(o + "attn.k.weight", h + "self_attn.k_proj.weight", T::HF_TRANSFORM_IDENTITY, {kv, C});
    add(o + "attn.v.weight", h + "self_attn.v_proj.weight", T::HF_TRANSFORM_IDENTITY, {kv, C});
    add(o + "attn.o.weight", h + "self_attn.o_proj.weight", T::HF_TRANSFORM_IDENTITY, {C, q});
    add(o + "mlp_norm.weight", h + "post_attention_layernorm.weight", T::HF_TRANSFORM_IDENTITY,
        {C});
    add(o + "mlp.gate.weight", h + "mlp.gate_proj.weight", T::HF_TRANSFORM_IDENTITY, {F, C});
    add(o + "mlp.up.weight", h + "mlp.up_proj.weight", T::HF_TRANSFORM_IDENTITY, {F, C});
    add(o + "mlp.down.weight", h + "mlp.down_proj.weight", T::HF_TRANSFORM_IDENTITY, {C, F});
  }
  add("norm_f.weight", "model.norm.weight", T::HF_TRANSFORM_IDENTITY, {C});
  add("lm_head.weight", "lm_head.weight", T::HF_TRANSFORM_VOCAB_ROWS, {V, C});
  return a;
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
  if (model_type == "gpt2") return n.ends_with(".attn.bias") || n.ends_with(".attn.masked_bias");
  if (model_type == "llama") return n.ends_with(".rotary_emb.inv_freq");
  return false;
}

HfAdapter make_hf_adapter(const model::ModelConfig& config, const model::ParamLayout& layout) {
  HfAdapter a;
  if (config.family == "gpt2") {
    a = gpt2_adapter(config);
  } else if (config.family == "llama") {
    a = llama_adapter(config);
  } else {
    fail("model.family: no Hugging Face mapping for family \"%s\" (supported: gpt2, llama)",
         config.family.c_str());
  }
  std::set<std::string> seen;
  for (const HfTensorMap& m : a.tensors) {
    GOSSAMER_CHECK(layout.contains(m.ours),
                   "HF adapter for %s: parameter %s (-> %s) is not in the model's layout",
                   a.model_type.c_str(), m.ours.c_str(), m.hf.c_str());
    GOSSAMER_CHECK(seen.insert(m.ours).second, "HF adapter for %s: parameter %s mapped twice",
                   a.model_type.c_str(), m.ours.c_str());
    const model::ParamView& v = layout.find(m.ours);
    GOSSAMER_CHECK(maps_onto(m.transform, v.shape, m.hf_shape),
                   "HF adapter for %s: %s %s does not map onto %s %s by %s", a.model_type.c_str(),
                   m.ours.c_str(), io::shape_to_string(v.shape).c_str(), m.hf.c_str(),
                   io::shape_to_string(m.hf_shape).c_str(), hf_transform_name(m.transform));
  }
  for (const model::ParamView& v : layout.views())
    GOSSAMER_CHECK(seen.count(v.name), "HF adapter for %s: parameter %s has no HF name",
                   a.model_type.c_str(), v.name.c_str());
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
