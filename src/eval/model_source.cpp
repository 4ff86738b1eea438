// load_model_for_inference(): checkpoint / run directory / HF directory -> model + tokenizer.
#include "eval/model_source.h"

#include "core/error.h"
#include "hf/import.h"
#include "hf/tokenizer_files.h"
#include "kernels/cpu/cpu_setup.h"
#include "kernels/ops.h"
#include "train/checkpoint.h"
#include "train/device_ops.h"

namespace gossamer::eval {

LoadedModel load_model_for_inference(const std::string& path, int max_batch, int max_seq,
                                     const std::string& tokenizer_spec, bool want_tokenizer,
                                     kernels::cpu::KernelsDevice device, const char* key) {
  LoadedModel m;
  m.hf = hf::is_hf_model_dir(path);
  m.path = m.hf ? path : train::resolve_checkpoint(path);
  if (m.hf)
    m.config.model = hf::read_hf_model_spec(m.path).config;
  else
    m.config =
        train::parse_run_config(train::load_checkpoint_config(m.path), m.path + "/trainer.json");
  kernels::cpu::KernelsConfig kernels = m.config.kernels;  // its threads and gemm backend
  kernels.device = device;
  const kernels::OpTable& ops = train::ops_for_run(kernels, 1, /*local_rank=*/0, key);
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
  if (m.hf)
    hf::load_hf_weights(m.path, hf::read_hf_model_spec(m.path), *m.model);
  else
    train::load_model_weights(m.path, *m.model);
  return m;
}

}  // namespace gossamer::eval
