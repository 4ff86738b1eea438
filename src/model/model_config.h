// ModelConfig: the shape of a model. Plain data; the `visit` method lists every field once
// with its documentation, and the same list drives JSON parsing, the resolved-config dump
// and the config reference (docs/CONFIG.md). Derived values are computed, never stored;
// what depends on the family comes from its row of the family table (family.h).
#pragma once

#include <cstdint>
#include <string>

#include "model/family.h"

namespace gossamer::model {

struct ModelConfig {
  ModelFamily family = ModelFamily::MODEL_FAMILY_GPT2;
  int n_layer = 4;
  int n_head = 4;
  int d_model = 128;
  int vocab_size = 50257;
  int padded_vocab = 0;  // 0: vocab_size rounded up to a multiple of 128
  int max_seq_len = 1024;
  double init_std = 0.02;
  // Llama only (ignored, and required to keep their defaults, for gpt2):
  int n_kv_head = 0;          // 0: n_head (multi-head attention)
  int d_ff = 0;               // 0: the family's default (its default_d_ff in family.h)
  double rope_theta = 10000;  // rotary embedding base
  double norm_eps = 1e-5;     // RMSNorm epsilon

  template <class V>
  void visit(V& v) {
    v("family", family,
      "model architecture; gpt2: learned positions, LayerNorm, GELU MLP, biases, tied "
      "embeddings; llama: RoPE, RMSNorm, SwiGLU MLP, grouped-query attention, no biases, untied "
      "head");
    v("n_layer", n_layer, "number of transformer blocks");
    v("n_head", n_head,
      "attention (query) heads; must divide d_model (llama: head size d_model/n_head even, for "
      "RoPE)");
    v("d_model", d_model, "residual stream width C");
    v("vocab_size", vocab_size, "tokenizer vocabulary V (50257 for GPT-2 BPE)");
    v("padded_vocab", padded_vocab,
      "embedding rows Vp >= V (0: V rounded up to a multiple of 128)");
    v("max_seq_len", max_seq_len,
      "longest sequence (gpt2: number of learned positions); data.seq_len must not exceed it");
    v("init_std", init_std,
      "std of the normal init of weights and embeddings (residual projections, gpt2 "
      "attn.proj/mlp.proj and llama attn.o/mlp.down, use init_std/sqrt(2*n_layer))");
    v("n_kv_head", n_kv_head,
      "llama: key/value heads, dividing n_head (0: n_head; 1: multi-query)");
    v("d_ff", d_ff,
      "MLP hidden width (0: gpt2 4*d_model; llama 8/3*d_model rounded up to a multiple of 256)");
    v("rope_theta", rope_theta, "llama: rotary position embedding base");
    v("norm_eps", norm_eps, "llama: RMSNorm epsilon (gpt2's LayerNorm uses 1e-5)");
  }

  int padded_vocab_resolved() const {
    return padded_vocab > 0 ? padded_vocab : (vocab_size + 127) / 128 * 128;
  }
  int n_kv_head_resolved() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  int d_ff_resolved() const { return d_ff > 0 ? d_ff : family_info(family).default_d_ff(d_model); }
  // Throws gossamer::Error naming the key (prefixed by `path`, e.g. "model.") when invalid.
  void validate(const std::string& path = "model.") const;
};

}  // namespace gossamer::model
