// DataConfig: the `data` section of a run config (which shards, the window shape, the order and
// the tokenizer). The data layer owns it; run/run_config.h puts it in the run config, whose
// visitors parse and document it from visit() below.
#pragma once

#include <string>

namespace gossamer::data {

struct DataConfig {
  std::string train = "data/web/train_*.bin";
  std::string val = "data/web/val_*.bin";
  int seq_len = 64;
  int micro_batch = 4;
  bool shuffle = true;
  std::string tokenizer = "data/tokenizers/gpt2";

  // Resume metadata (run/resume_check.h): the value a checkpoint written before a key existed
  // ran with (added_later), and the keys whose change leaves the run the same run (harmless).
  template <class R>
  static void resume_keys(R& r) {
    r.harmless("val");
    r.harmless("tokenizer");
    r.harmless("micro_batch");  // the per-rank share of the global batch, compared on its own
  }

  template <class V>
  void visit(V& v) {
    v("train", train, "training shards: comma-separated files or glob patterns");
    v("val", val, "validation shards (\"\" for none)");
    v("seq_len", seq_len, "tokens per sequence T");
    v("micro_batch", micro_batch, "sequences per forward/backward on each rank (B)");
    v("shuffle", shuffle, "visit training windows in a seeded random order each epoch");
    v("tokenizer", tokenizer,
      "tokenizer for samples and generate: gpt2:DIR, spm:MODEL_FILE, or a GPT-2 directory "
      "(encoder.json, vocab.bpe)");
  }
};

}  // namespace gossamer::data
