// model_source.h: checkpoint / run directory / HF directory -> model config, weights, tokenizer.
#include "run/model_source.h"

#include "core/error.h"
#include "core/log.h"
#include "hf/hf_weights.h"
#include "hf/tokenizer_files.h"
#include "kernels/cpu/cpu_setup.h"
#include "kernels/ops.h"
#include "model/model_config_json.h"
#include "run/checkpoint.h"
#include "run/device_ops.h"

namespace gossamer::run {

ModelSource resolve_model_source(const std::string& path) {
  ModelSource s;
  s.hf = hf::is_hf_model_dir(path);
  s.path = s.hf ? path : resolve_checkpoint(path);
  if (s.hf)
    s.config.model = hf::read_hf_model_spec(s.path).config;
  else
    s.config = parse_run_config(load_checkpoint_config(s.path), s.path + "/trainer.json");
  return s;
}

void load_weights(const ModelSource& source, model::Model& model) {
  if (source.hf)
    hf::load_hf_weights(source.path, hf::read_hf_model_spec(source.path), model);
  else
    load_model_weights(source.path, model);
}

void init_weights_from(const std::string& path, model::Model& model) {
  const ModelSource source = resolve_model_source(path);
  const std::string diff = model::model_config_difference(source.config.model, model.config());
  GOSSAMER_CHECK(
      diff.empty(),
      source.hf
          ? "train.init_from (--init-from) %s: config.json describes another model than the run's "
            "(%s, config.json vs run)"
          : "train.init_from (--init-from) %s: the checkpoint is of another model than the run's "
            "(%s, checkpoint vs run)",
      source.path.c_str(), diff.c_str());
  load_weights(source, model);
  log_info("initialised the weights from %s %s",
           source.hf ? "Hugging Face directory" : "checkpoint", source.path.c_str());
}

LoadedModel load_model_for_inference(const std::string& path, int max_batch, int max_seq,
                                     const std::string& tokenizer_spec, bool want_tokenizer,
                                     kernels::cpu::KernelsDevice device, const char* key) {
  LoadedModel m;
  static_cast<ModelSource&>(m) = resolve_model_source(path);
  kernels::cpu::KernelsConfig kernels = m.config.kernels;  // its threads and gemm backend
  kernels.device = device;
  const kernels::OpTable& ops = ops_for_run(kernels, 1, /*local_rank=*/0, key);
  if (want_tokenizer) {
    m.tokenizer = m.hf && tokenizer_spec.empty()
                      ? hf::load_hf_tokenizer(m.path)
                      : data::load_tokenizer(tokenizer_spec.empty() ? m.config.data.tokenizer
                                                                    : tokenizer_spec);
    GOSSAMER_CHECK(uint32_t(m.config.model.vocab_size) <= m.tokenizer->vocab_size(),
                   "tokenizer %s has %u tokens, fewer than the model's vocab_size %d",
                   m.tokenizer->name().c_str(), m.tokenizer->vocab_size(),
                   m.config.model.vocab_size);
  }
  const int seq = max_seq > 0 ? max_seq : m.config.model.max_seq_len;
  GOSSAMER_CHECK(seq <= m.config.model.max_seq_len,
                 "%s: sequences of %d tokens exceed the model's max_seq_len %d", m.path.c_str(),
                 seq, m.config.model.max_seq_len);
  m.model = model::make_model(m.config.model, max_batch, seq, ops);
  load_weights(m, *m.model);
  return m;
}

}  // namespace gossamer::run
