// Rotary position embedding (RoPE; Su et al. 2021, https://arxiv.org/abs/2104.09864) in the
// Hugging Face "rotate_half" convention of LlamaForCausalLM's apply_rotary_pos_emb: within a
// head of (even) size hs, element i pairs with element i + hs/2 (not with i + 1, as in the
// original interleaved form), with
//   inv_freq[i] = theta^(-2i/hs),  angle = t * inv_freq[i],  c = cos(angle), s = sin(angle)
//   x'[i]        = x[i] c - x[i + hs/2] s
//   x'[i + hs/2] = x[i + hs/2] c + x[i] s              for i < hs/2, t the position in [0, T).
// Because our q/k weights are rotated in this convention, export to Hugging Face copies
// attn.q/attn.k as they are (no row permutation, unlike Meta's interleaved checkpoints).
// Both ops work in place on a strided buffer: x is (B,T,row_stride) and heads [0, n_heads)
// occupy columns [0, n_heads*head_dim) of each row (e.g. the q and k heads of a qkv row, which
// are adjacent); the other columns are not touched. Angles are computed in double.
//   forward:  x = rotate(x)                     (assigned, in place)
//   backward: dx = rotate^T(dx) = rotate^-1(dx) (assigned, in place: the gradient of a rotation)
// head_dim must be even; the caller validates it (model config: d_model / n_head even).
#pragma once

namespace gossamer::kernels::cpu {

template <class Real>
void rope_forward(Real* x,  // (B,T,row_stride), columns [0, n_heads*head_dim) rotated
                  int B, int T, int n_heads, int head_dim, int row_stride, double theta);

template <class Real>
void rope_backward(Real* dx,  // (B,T,row_stride), columns [0, n_heads*head_dim) rotated back
                   int B, int T, int n_heads, int head_dim, int row_stride, double theta);

}  // namespace gossamer::kernels::cpu
