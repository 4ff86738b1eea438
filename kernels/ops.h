// The op table: the one dispatch point between model code and a backend.
// Each backend (CPU now, CUDA later) fills an OpTable with its fp32 implementations of
// the ops declared in kernels/cpu/*.h (same argument conventions, same = / += rules);
// model code calls ops only through the table and never branches on the device.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gossamer::kernels {

struct OpTable {
  const char* backend;  // "cpu" or "cuda"
  void (*encoder_forward)(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                          int B, int T, int C);
  void (*encoder_backward)(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                           int B, int T, int C);
  void (*layernorm_forward)(float* out, float* mean, float* rstd, const float* inp, const float* w,
                            const float* b, int N, int C);
  void (*layernorm_backward)(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                             const float* w, const float* mean, const float* rstd, int N, int C);
  void (*matmul_forward)(float* out, const float* inp, const float* w, const float* bias, int N,
                         int C, int OC);
  void (*matmul_backward)(float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                          const float* w, int N, int C, int OC);
  void (*attention_forward)(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                            int NKV);
  void (*attention_backward)(float* dqkv, float* scratch, const float* dout, const float* qkv,
                             const float* att, int B, int T, int C, int NH, int NKV);
  void (*rmsnorm_forward)(float* out, float* rstd, const float* inp, const float* w, int N, int C,
                          double eps);
  void (*rmsnorm_backward)(float* dinp, float* dw, const float* dout, const float* inp,
                           const float* w, const float* rstd, int N, int C);
  void (*rope_forward)(float* x, int B, int T, int n_heads, int head_dim, int row_stride,
                       double theta);
  void (*rope_backward)(float* dx, int B, int T, int n_heads, int head_dim, int row_stride,
                        double theta);
  void (*swiglu_forward)(float* out, const float* inp, int N, int F);
  void (*swiglu_backward)(float* dinp, const float* dout, const float* inp, int N, int F);
  void (*gelu_forward)(float* out, const float* inp, size_t n);
  void (*gelu_backward)(float* dinp, const float* inp, const float* dout, size_t n);
  void (*add)(float* out, const float* a, const float* b, size_t n);
  void (*accumulate)(float* dst, const float* src, size_t n);
  void (*scale)(float* x, float s, size_t n);
  double (*sum_squares)(const float* x, size_t n);
  void (*crossentropy_forward)(float* losses, float* probs, const float* logits,
                               const int32_t* targets, int N, int V, int Vp);
  void (*crossentropy_backward)(float* dlogits, const float* probs, const int32_t* targets,
                                float scale, int N, int V, int Vp);
  void (*adamw_update)(float* param, const float* grad, float* m, float* v, size_t n, float lr,
                       float beta1, float beta2, float eps, float weight_decay, int64_t t);
  void (*adams_update)(float* param, const float* grad, float* m, size_t n, float lr, float beta1,
                       float beta2, float eps, float weight_decay, int64_t t, bool code_form);
  void (*adams_update_indexed)(float* param, float* m, const uint32_t* idx, const float* g,
                               const uint8_t* decay, size_t k, float lr, float beta1, float beta2,
                               float eps, float weight_decay, int64_t t, bool code_form);
  void (*adams_update_from_momentum)(float* param, float* m_last, float* last, const uint32_t* idx,
                                     const float* m_now, const uint8_t* decay, size_t k, float lr,
                                     float beta1, float beta2, float eps, float weight_decay,
                                     int64_t t, bool code_form, int catch_up_max);
};

// The CPU backend (always built).
const OpTable& cpu_ops();

}  // namespace gossamer::kernels
