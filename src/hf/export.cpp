// Implementation of export.h: validate, stage, write, commit.
#include "hf/export.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "hf/adapter.h"
#include "hf/hf_config.h"
#include "hf/tokenizer_files.h"
#include "io/safetensors.h"
#include "io/staging_dir.h"
#include "model/host_params.h"
#include "model/model_config_json.h"

namespace gossamer::hf {

namespace {

// Our padded vocabulary rows are zero by construction; export drops them, so say so if not.
void warn_nonzero_padding(const HfAdapter& a, const model::Model& m, const float* params) {
  for (const HfTensorMap& t : a.tensors) {
    if (t.transform != HfTransform::HF_TRANSFORM_VOCAB_ROWS) continue;
    const model::ParamView& v = m.layout().find(t.ours);
    const float* p = params + v.offset;
    for (size_t i = size_t(io::shape_numel(t.hf_shape)); i < v.numel; ++i) {
      if (p[i] != 0.0f) {
        log_warn(
            "export-hf: %s has non-zero padded rows (beyond vocab_size %lld); they are "
            "not exported",
            t.ours.c_str(), (long long)t.hf_shape[0]);
        break;
      }
    }
  }
}

}  // namespace

void export_hf_model(const model::Model& model, const std::string& tokenizer_spec,
                     const std::string& hf_dir, bool force) {
  Stopwatch watch;
  const model::ModelConfig& cfg = model.config();
  const HfAdapter adapter = make_hf_adapter(cfg, model.layout());
  std::optional<HfTokenizerFiles> tok;
  if (!tokenizer_spec.empty()) tok = open_tokenizer_for_export(tokenizer_spec, cfg.vocab_size);
  const model::HostParamsView host(model);  // read back from device memory
  const float* params = host.span().data();
  warn_nonzero_padding(adapter, model, params);

  io::StagingDir out(hf_dir, io::CommandOutput{"export-hf", force}, "export-hf: HF_DIR");
  HfSpecialTokens ids;
  if (tok) ids = write_hf_tokenizer(*tok, cfg.max_seq_len, out);

  io::SafetensorsWriter w;
  w.set_metadata("format", "pt");  // transformers refuses files without a known format
  w.set_metadata(kHfGossamerConfigKey, model::model_config_to_json(cfg).dump());
  std::vector<std::vector<float>> scratch(adapter.tensors.size());
  size_t bytes = 0;
  for (size_t i = 0; i < adapter.tensors.size(); ++i) {
    const HfTensorMap& t = adapter.tensors[i];
    const float* data = hf_tensor_from_ours(t, model.layout().find(t.ours), params, scratch[i]);
    w.add(t.hf, io::DType::DTYPE_F32, t.hf_shape, data);
    bytes += size_t(io::shape_numel(t.hf_shape)) * sizeof(float);
  }
  w.write(out.path() + "/model.safetensors");
  out.write_file("config.json", hf_config_json(cfg, ids).dump(2) + "\n");
  out.write_file("generation_config.json", hf_generation_config_json(ids).dump(2) + "\n");
  out.commit();
  log_info("export-hf: wrote %s (%s, %zu tensors, %.1f MB%s) in %.2f s", out.final_path().c_str(),
           adapter.family->architecture.c_str(), adapter.tensors.size(), bytes / 1e6,
           tok ? (", tokenizer " + tok->tokenizer->name()).c_str() : ", no tokenizer",
           watch.seconds());
}

}  // namespace gossamer::hf
