// GPT-2 on one device, forward and backward written by hand over the op table.
// Token + learned position embeddings, pre-LayerNorm blocks (causal multi-head attention,
// GELU MLP), biases, final LayerNorm, LM head tied to the token embedding, padded vocabulary.
// Parameters and gradients are two flat buffers with the same ParamLayout, laid out in
// backward order: ln_f, blocks L-1 .. 0, wpe, wte. backward() reports each range whose
// gradients are final through the hook, as a growing prefix of the flat buffer.
// All activation memory is allocated once at construction for (max_batch, max_seq); the
// buffers, checks and loss shared with the other families live in DecoderModel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "model/decoder_model.h"

namespace gossamer::model {

class Gpt2 final : public DecoderModel {
 public:
  Gpt2(const ModelConfig& config, int max_batch, int max_seq, const kernels::OpTable& ops);

  // The family's row of the family table (family.h): MLP width 4C; no grouped-query
  // attention, d_ff, RoPE or RMSNorm settings (they must keep their defaults).
  static int default_d_ff(int d_model) { return 4 * d_model; }
  static void validate_config(const ModelConfig& config, const std::string& path);

  // GPT-2 initialisation from `seed`: weights and embeddings ~ N(0, init_std), residual
  // projections ~ N(0, init_std / sqrt(2 n_layer)), biases 0, norm gains 1, padded rows 0.
  void init_weights(uint64_t seed) override;

  // Forward pass on tokens (B,T). With targets (B,T) it returns the mean cross-entropy over
  // the B*T positions and prepares backward(); without targets it leaves the logits (B,T,Vp)
  // readable through logits() and returns 0. Throws on out-of-range tokens or shapes.
  float forward(const int32_t* tokens, const int32_t* targets, int B, int T) override;

  // Accumulates d(grad_scale * loss)/d(params) into grads() (+=). Requires a forward with
  // targets. hook (optional) sees every range of final gradients in buffer order.
  void backward(float grad_scale, const GradReadyHook& hook) override;
  using Model::backward;

  // Parameters counted for the FLOP estimate 6N + 6LCT per token: all parameters except the
  // position embedding and the padded vocabulary rows.
  size_t num_flop_params() const override;

 private:
  struct LayerOffsets {
    size_t begin, end;  // range of the whole layer in the flat buffer
    size_t ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
  };
  void build_layout();

  int NH_;
  std::vector<LayerOffsets> layers_;
  size_t lnfw_ = 0, lnfb_ = 0, wpe_ = 0, wte_ = 0, lnf_end_ = 0;

  // Activations of the last forward (sized for max_B_ x max_T_).
  HostBuffer<float> encoded_;                    // (B,T,C)
  HostBuffer<float> ln1_, ln1_mean_, ln1_rstd_;  // (L,B,T,C), (L,B,T) x2
  HostBuffer<float> qkv_, atty_, att_;           // (L,B,T,3C), (L,B,T,C), (L,B,NH,T,T)
  HostBuffer<float> residual2_, ln2_, ln2_mean_, ln2_rstd_;
  HostBuffer<float> fch_, fch_gelu_, residual3_;  // (L,B,T,4C) x2, (L,B,T,C)
  HostBuffer<float> lnf_, lnf_mean_, lnf_rstd_;   // (B,T,C), (B,T) x2
  // Backward scratch, reused by every layer.
  HostBuffer<float> dresidual_, dbt_c_, dqkv_, dfch_gelu_, dfch_, datt_;
};

}  // namespace gossamer::model
