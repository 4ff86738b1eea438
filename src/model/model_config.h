// ModelConfig: the shape of a model. Plain data; the `visit` method lists every field once
// with its documentation, and the same list drives JSON parsing, the resolved-config dump
// and the config reference (docs/CONFIG.md). Derived values are computed, never stored.
#pragma once

#include <cstdint>
#include <string>

namespace gossamer::model {

struct ModelConfig {
  std::string family = "gpt2";
  int n_layer = 4;
  int n_head = 4;
  int d_model = 128;
  int vocab_size = 50257;
  int padded_vocab = 0;  // 0: vocab_size rounded up to a multiple of 128
  int max_seq_len = 1024;
  double init_std = 0.02;

  template <class V>
  void visit(V& v) {
    v("family", family, "model family; \"gpt2\" (learned positions, LayerNorm, GELU MLP, biases, tied embeddings)");
    v("n_layer", n_layer, "number of transformer blocks");
    v("n_head", n_head, "attention heads; must divide d_model");
    v("d_model", d_model, "residual stream width C");
    v("vocab_size", vocab_size, "tokenizer vocabulary V (50257 for GPT-2 BPE)");
    v("padded_vocab", padded_vocab, "embedding rows Vp >= V (0: V rounded up to a multiple of 128)");
    v("max_seq_len", max_seq_len, "number of learned positions; data.seq_len must not exceed it");
    v("init_std", init_std, "std of the normal init of weights and embeddings (residual projections use init_std/sqrt(2*n_layer))");
  }

  int padded_vocab_resolved() const {
    return padded_vocab > 0 ? padded_vocab : (vocab_size + 127) / 128 * 128;
  }
  int d_ff() const { return 4 * d_model; }
  // Throws gossamer::Error naming the key (prefixed by `path`, e.g. "model.") when invalid.
  void validate(const std::string& path = "model.") const;
};

}  // namespace gossamer::model
