// Llama on one device, forward and backward written by hand over the op table.
// Token embedding (no position embedding), pre-RMSNorm blocks (causal grouped-query attention
// with rotary position embeddings in the Hugging Face rotate_half convention, SwiGLU MLP), no
// biases, final RMSNorm, untied LM head, padded vocabulary. Parameters and gradients are two
// flat buffers with the same ParamLayout, laid out in backward order: lm_head, norm_f, blocks
// L-1 .. 0, wte. The q/k/v matrices of a block are adjacent (one ((NH+2NKV)*hs, C) product), as
// are gate/up (one (2F, C) product). backward() reports each range whose gradients are final
// through the hook, as a growing prefix of the flat buffer.
// All activation memory is allocated once at construction for (max_batch, max_seq).
// forward(), backward(), init_weights() and num_flop_params() live in DecoderModel with the
// buffers, checks and loss shared with the other families; forward() and backward() call the
// hand-written forward_hidden() and backward_from_hidden() here, the other two read the
// family's row of the family table (family.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "model/decoder_model.h"

namespace gossamer::model {

class Llama final : public DecoderModel {
 public:
  Llama(const ModelConfig& config, int max_batch, int max_seq, const kernels::OpTable& ops,
        kernels::MatmulDtype matmul_dtype = kernels::MatmulDtype::MATMUL_DTYPE_FP32);

  // The family's row of the family table (family.h): MLP width 8/3 C rounded up to a
  // multiple of 256; RoPE needs an even head size.
  static int default_d_ff(int d_model) { return (8 * d_model / 3 + 255) / 256 * 256; }
  static void validate_config(const ModelConfig& config, const std::string& path);
  // Without building the model: its parameters, and the floats of the activation buffers the
  // constructor allocates for (max_batch, max_seq), one size per buffer in its order.
  static size_t parameter_count(const ModelConfig& config);
  static std::vector<size_t> activation_sizes(const ModelConfig& config, int max_batch, int max_seq,
                                              const kernels::OpTable& ops);

 private:
  const float* forward_hidden(int B, int T) override;
  void backward_from_hidden(const float* dhidden, const GradReadyHook& hook) override;

  struct LayerOffsets {
    // qkv: attn.q.weight, the start of the adjacent q/k/v rows; gate_up: mlp.gate.weight,
    // the start of the adjacent gate/up rows.
    size_t attn_norm, qkv, o, mlp_norm, gate_up, down;
  };
  void build_layout();

  int NH_, NKV_, hs_, F_;
  int QKV_;  // width of a qkv row, (NH + 2 NKV) hs
  std::vector<LayerOffsets> layers_;
  size_t lm_head_ = 0, norm_f_ = 0, wte_ = 0;

  // Activations of the last forward (sized for max_B_ x max_T_).
  Buffer<float> encoded_;                          // (B,T,C)
  Buffer<float> attn_norm_, attn_rstd_;            // (L,B,T,C), (L,B,T)
  Buffer<float> qkv_, atty_, att_saved_;           // (L,B,T,QKV) after RoPE, (L,B,T,C),
                                                   // (L, the op table's attention_saved_size)
  Buffer<float> residual2_, mlp_norm_, mlp_rstd_;  // (L,B,T,C) x2, (L,B,T)
  Buffer<float> gate_up_, swiglu_, residual3_;     // (L,B,T,2F), (L,B,T,F), (L,B,T,C)
  Buffer<float> norm_f_out_, norm_f_rstd_;         // (B,T,C), (B,T)
  // Backward scratch, reused by every layer.
  Buffer<float> dresidual_, dbt_c_, dqkv_, dswiglu_, dgate_up_;
  Buffer<float> att_scratch_;  // the op table's attention_scratch_size
};

}  // namespace gossamer::model
