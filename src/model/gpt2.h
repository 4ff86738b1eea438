// GPT-2 on one device, forward and backward written by hand over the op table.
// Token + learned position embeddings, pre-LayerNorm blocks (causal multi-head attention,
// GELU MLP), biases, final LayerNorm, LM head tied to the token embedding, padded vocabulary.
// Parameters and gradients are two flat buffers with the same ParamLayout, laid out in
// backward order: ln_f, blocks L-1 .. 0, wpe, wte. backward() reports each range whose
// gradients are final through the hook, as a growing prefix of the flat buffer.
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

class Gpt2 final : public DecoderModel {
 public:
  Gpt2(const ModelConfig& config, int max_batch, int max_seq, const kernels::OpTable& ops,
       kernels::MatmulDtype matmul_dtype = kernels::MatmulDtype::MATMUL_DTYPE_FP32);

  // The family's row of the family table (family.h): MLP width 4C; no grouped-query
  // attention, d_ff, RoPE or RMSNorm settings (they must keep their defaults).
  static int default_d_ff(int d_model) { return 4 * d_model; }
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
    size_t ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
  };
  void build_layout();

  int NH_;
  std::vector<LayerOffsets> layers_;
  size_t lnfw_ = 0, lnfb_ = 0, wpe_ = 0, wte_ = 0;

  // Activations of the last forward (sized for max_B_ x max_T_).
  Buffer<float> encoded_;                    // (B,T,C)
  Buffer<float> ln1_, ln1_mean_, ln1_rstd_;  // (L,B,T,C), (L,B,T) x2
  Buffer<float> qkv_, atty_, att_saved_;     // (L,B,T,3C), (L,B,T,C), L x attention_saved_size
  Buffer<float> residual2_, ln2_, ln2_mean_, ln2_rstd_;
  Buffer<float> fch_, fch_gelu_, residual3_;  // (L,B,T,4C) x2, (L,B,T,C)
  Buffer<float> lnf_, lnf_mean_, lnf_rstd_;   // (B,T,C), (B,T) x2
  // Backward scratch, reused by every layer.
  Buffer<float> dresidual_, dbt_c_, dqkv_, dfch_gelu_, dfch_;
  Buffer<float> att_scratch_;  // the op table's attention_scratch_size
};

}  // namespace gossamer::model
