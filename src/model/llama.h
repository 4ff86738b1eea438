// Llama on one device, forward and backward written by hand over the op table.
// Token embedding (no position embedding), pre-RMSNorm blocks (causal grouped-query attention
// with rotary position embeddings in the Hugging Face rotate_half convention, SwiGLU MLP), no
// biases, final RMSNorm, untied LM head, padded vocabulary. Parameters and gradients are two
// flat buffers with the same ParamLayout, laid out in backward order: lm_head, norm_f, blocks
// L-1 .. 0, wte. The q/k/v matrices of a block are adjacent (one ((NH+2NKV)*hs, C) product), as
// are gate/up (one (2F, C) product). backward() reports each range whose gradients are final
// through the hook, as a growing prefix of the flat buffer.
// All activation memory is allocated once at construction for (max_batch, max_seq); the
// buffers, checks and loss shared with the other families live in DecoderModel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "model/decoder_model.h"

namespace gossamer::model {

class Llama final : public DecoderModel {
 public:
  Llama(const ModelConfig& config, int max_batch, int max_seq, const kernels::OpTable& ops);

  // The family's row of the family table (family.h): MLP width 8/3 C rounded up to a
  // multiple of 256; RoPE needs an even head size.
  static int default_d_ff(int d_model) { return (8 * d_model / 3 + 255) / 256 * 256; }
  static void validate_config(const ModelConfig& config, const std::string& path);

  // Initialisation from `seed`: matrices, wte and lm_head ~ N(0, init_std), the residual
  // projections attn.o and mlp.down ~ N(0, init_std / sqrt(2 n_layer)), norm gains 1, padded
  // vocabulary rows of wte and lm_head 0.
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
  // input embedding wte (a lookup, no FLOPs) and the padded rows of lm_head. lm_head counts:
  // its product is the largest of the model.
  size_t num_flop_params() const override;

 private:
  struct LayerOffsets {
    size_t begin, end;  // range of the whole layer in the flat buffer
    // qkv: attn.q.weight, the start of the adjacent q/k/v rows; gate_up: mlp.gate.weight,
    // the start of the adjacent gate/up rows.
    size_t attn_norm, qkv, o, mlp_norm, gate_up, down;
  };
  void build_layout();

  int NH_, NKV_, hs_, F_;
  int QKV_;  // width of a qkv row, (NH + 2 NKV) hs
  std::vector<LayerOffsets> layers_;
  size_t lm_head_ = 0, norm_f_ = 0, norm_f_end_ = 0, wte_ = 0;

  // Activations of the last forward (sized for max_B_ x max_T_).
  HostBuffer<float> encoded_;                          // (B,T,C)
  HostBuffer<float> attn_norm_, attn_rstd_;            // (L,B,T,C), (L,B,T)
  HostBuffer<float> qkv_, atty_, att_;                 // (L,B,T,QKV) after RoPE, (L,B,T,C),
                                                       // (L,B,NH,T,T)
  HostBuffer<float> residual2_, mlp_norm_, mlp_rstd_;  // (L,B,T,C) x2, (L,B,T)
  HostBuffer<float> gate_up_, swiglu_, residual3_;     // (L,B,T,2F), (L,B,T,F), (L,B,T,C)
  HostBuffer<float> norm_f_out_, norm_f_rstd_;         // (B,T,C), (B,T)
  // Backward scratch, reused by every layer.
  HostBuffer<float> dresidual_, dbt_c_, dqkv_, dswiglu_, dgate_up_, datt_;
};

}  // namespace gossamer::model
