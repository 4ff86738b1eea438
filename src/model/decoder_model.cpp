// The shared scaffolding of the decoder-only families (see decoder_model.h): checks, buffers,
// the block layout, forward/backward around the family's passes, and the LM head fused with
// the cross-entropy in row chunks.
#include "model/decoder_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"

namespace gossamer::model {

DecoderModel::DecoderModel(const ModelConfig& config, ModelFamily family, int max_batch,
                           int max_seq, const kernels::OpTable& ops,
                           kernels::MatmulDtype matmul_dtype)
    : cfg_(config), ops_(ops), matmul_dtype_(matmul_dtype), family_(family_info(family)) {
  cfg_.validate();
  GOSSAMER_CHECK(cfg_.family == family, "model: a %s model built from a config of family \"%s\"",
                 family_name(family), family_name(cfg_.family));
  GOSSAMER_CHECK(max_batch >= 1, "model: batch size must be >= 1, found %d", max_batch);
  GOSSAMER_CHECK(max_seq >= 1 && max_seq <= cfg_.max_seq_len,
                 "model: sequence length %d must lie in [1, model.max_seq_len=%d]", max_seq,
                 cfg_.max_seq_len);
  max_B_ = max_batch, max_T_ = max_seq;
  C_ = cfg_.d_model, L_ = cfg_.n_layer;
  V_ = cfg_.vocab_size, Vp_ = cfg_.padded_vocab_resolved();
  const size_t BT = size_t(max_B_) * max_T_;
  const MemoryOps& memory = *ops_.memory;
  tokens_ = Buffer<int32_t>(BT, memory);
  targets_ = Buffer<int32_t>(BT, memory);
  losses_ = Buffer<float>(BT, memory);
  size_head_chunk();
  if (!memory.host_accessible) losses_host_ = HostBuffer<float>(BT);
}

void DecoderModel::layout_blocks(
    const std::function<void(int l, const std::string& prefix)>& add_block) {
  head_end_ = layout_.total();
  blocks_.resize(L_);
  for (int l = L_ - 1; l >= 0; --l) {
    blocks_[l].begin = layout_.total();
    add_block(l, "blocks." + std::to_string(l) + ".");
    blocks_[l].end = layout_.total();
  }
  embeddings_begin_ = layout_.total();
}

void DecoderModel::head_ready(const GradReadyHook& hook) const {
  if (hook) hook(0, head_end_);
}

void DecoderModel::block_ready(const GradReadyHook& hook, int l) const {
  if (hook) hook(blocks_[l].begin, blocks_[l].end);
}

void DecoderModel::embeddings_ready(const GradReadyHook& hook) const {
  if (hook) hook(embeddings_begin_, layout_.total());
}

void DecoderModel::allocate_parameters() {
  params_ = Buffer<float>(layout_.total(), *ops_.memory);
  grads_ = Buffer<float>(layout_.total(), *ops_.memory);
  const auto& views = layout_.views();
  GOSSAMER_CHECK(std::any_of(views.begin(), views.end(),
                             [&](const ParamView& v) {
                               return v.offset == lm_head_w_ && v.numel == size_t(Vp_) * C_;
                             }),
                 "model: the family set no (%d x %d) LM head matrix (lm_head_w_)", Vp_, C_);
  if (matmul_dtype_ != kernels::MatmulDtype::MATMUL_DTYPE_BF16) return;
  params_bf16_ = Buffer<uint16_t>(layout_.total(), *ops_.memory);
}

void DecoderModel::reserve_linear(std::initializer_list<std::pair<int, int>> c_oc) {
  linear_shapes_.assign(c_oc.begin(), c_oc.end());
  size_linear_scratch();
}

void DecoderModel::set_linear_chunk_elems(size_t elems) {
  GOSSAMER_CHECK(elems >= 1, "model: bf16 product chunks of %zu elements", elems);
  linear_chunk_elems_ = elems;
  size_linear_scratch();
  size_head_chunk();
}

void DecoderModel::size_head_chunk() {
  head_out_ = Buffer<float>();  // the old one goes before the new one comes
  head_out_ = Buffer<float>(size_t(head_chunk_rows()) * Vp_, *ops_.memory);
}

void DecoderModel::size_linear_scratch() {
  if (matmul_dtype_ != kernels::MatmulDtype::MATMUL_DTYPE_BF16) return;
  size_t bytes = 0;
  for (auto [C, OC] : linear_shapes_)
    bytes = std::max(bytes, ops_.matmul_bf16_scratch_bytes(linear_rows(C, OC), C, OC));
  linear_scratch_ = Buffer<unsigned char>();  // the old one goes before the new one comes
  linear_scratch_ = Buffer<unsigned char>(bytes, *ops_.memory);
}

void DecoderModel::allocate_activations(std::span<Buffer<float>* const> buffers,
                                        const std::vector<size_t>& sizes) {
  GOSSAMER_CHECK(buffers.size() == sizes.size(),
                 "model: %zu activation buffers and %zu sizes (the family's activation_sizes() "
                 "and its constructor disagree)",
                 buffers.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) *buffers[i] = Buffer<float>(sizes[i], *ops_.memory);
}

int DecoderModel::linear_rows(int C, int OC) const {
  const size_t widest = size_t(std::max({C, OC, 1}));
  return int(std::clamp<size_t>(linear_chunk_elems_ / widest, 1, size_t(max_B_) * max_T_));
}

void DecoderModel::linear_forward(float* out, const float* inp, size_t w_offset, const float* bias,
                                  int N, int C, int OC) {
  count_flops(2.0 * N * C * OC);
  if (matmul_dtype_ == kernels::MatmulDtype::MATMUL_DTYPE_FP32) {
    ops_.matmul_forward(out, inp, params_.data() + w_offset, bias, N, C, OC);
    return;
  }
  const int R = linear_rows(C, OC);
  GOSSAMER_CHECK(ops_.matmul_bf16_scratch_bytes(std::min(R, N), C, OC) <= linear_scratch_.size(),
                 "model: a (%d x %d) product of %d rows outgrows the bf16 scratch", OC, C, N);
  for (int r = 0; r < N; r += R)
    ops_.matmul_bf16_forward(out + size_t(r) * OC, inp + size_t(r) * C,
                             params_bf16_.data() + w_offset, bias, std::min(R, N - r), C, OC,
                             linear_scratch_.data());
}

void DecoderModel::linear_backward(float* dinp, float* dw, float* dbias, const float* dout,
                                   const float* inp, size_t w_offset, int N, int C, int OC) {
  count_flops(((dinp ? 2.0 : 0.0) + (dw ? 2.0 : 0.0)) * N * C * OC);
  if (matmul_dtype_ == kernels::MatmulDtype::MATMUL_DTYPE_FP32) {
    ops_.matmul_backward(dinp, dw, dbias, dout, inp, params_.data() + w_offset, N, C, OC);
    return;
  }
  const int R = linear_rows(C, OC);
  GOSSAMER_CHECK(ops_.matmul_bf16_scratch_bytes(std::min(R, N), C, OC) <= linear_scratch_.size(),
                 "model: a (%d x %d) product of %d rows outgrows the bf16 scratch", OC, C, N);
  for (int r = 0; r < N; r += R)  // dw and dbias add up over the chunks in row order
    ops_.matmul_bf16_backward(dinp ? dinp + size_t(r) * C : nullptr, dw, dbias,
                              dout + size_t(r) * OC, inp + size_t(r) * C,
                              params_bf16_.data() + w_offset, std::min(R, N - r), C, OC,
                              linear_scratch_.data());
}

void DecoderModel::count_attention(int B, int T, int Q, bool backward) {
  count_flops((backward ? 4.0 : 2.0) * B * double(T) * T * Q);
}

void DecoderModel::init_weights(uint64_t seed) {
  Rng rng(seed, family_.init_stream);
  const double std = cfg_.init_std;
  const double proj_std = std / std::sqrt(2.0 * L_);
  // Drawn on the host: in place when the backend's memory is host memory, else view by view
  // into a staging buffer that is then uploaded.
  const bool in_place = params_.memory().host_accessible;
  size_t largest = 0;
  for (const ParamView& v : layout_.views()) largest = std::max(largest, v.numel);
  HostBuffer<float> staging(in_place ? 0 : largest);
  for (const ParamView& v : layout_.views()) {
    float* x = in_place ? params_.data() + v.offset : staging.data();
    if (v.kind == ParamKind::PARAM_KIND_NORM) {
      const bool gain = v.name.ends_with(".weight");
      for (size_t i = 0; i < v.numel; ++i) x[i] = gain ? 1.0f : 0.0f;
    } else if (v.kind == ParamKind::PARAM_KIND_BIAS) {
      std::fill_n(x, v.numel, 0.0f);
    } else {
      const bool residual_proj = v.name.ends_with(family_.residual_proj_attn) ||
                                 v.name.ends_with(family_.residual_proj_mlp);
      const double s = residual_proj ? proj_std : std;
      size_t n = v.numel;
      if (v.name == "wte" || v.name == "lm_head.weight") n = size_t(V_) * C_;  // padded rows 0
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(s * rng.normal());
      for (size_t i = n; i < v.numel; ++i) x[i] = 0.0f;
    }
    if (!in_place) params_.upload(x, v.numel, v.offset);
  }
}

size_t DecoderModel::num_flop_params() const {
  const size_t lookup = layout_.find(std::string(family_.lookup_embedding)).numel;
  return layout_.total() - lookup - size_t(Vp_ - V_) * C_;
}

void DecoderModel::zero(float* p, size_t n) const {
  ops_.memory->zero(p, n * sizeof(float));
}

void DecoderModel::zero_grad() {
  if (!routed_hook_) return zero(grads_.data(), grads_.size());
  zero_unrouted_grads();
}

void DecoderModel::zero_unrouted_grads() {
  const auto& views = layout_.views();
  for (size_t i = 0; i < views.size();) {  // maximal runs of views that are not routed
    size_t j = i;
    while (j < views.size() && !routed_view_[j]) ++j;
    if (j > i) {
      const size_t begin = views[i].offset, end = views[j - 1].offset + views[j - 1].numel;
      zero(grads_.data() + begin, end - begin);
    }
    i = j + 1;
  }
}

void DecoderModel::route_block_weight_gradients(RoutedGradientHook on_ready) {
  GOSSAMER_CHECK(!routed_hook_, "model: block weight gradients are routed already");
  GOSSAMER_CHECK(on_ready != nullptr, "model: routing block weight gradients needs a hook");
  // The hook gets each gradient in the model's memory (the op table's): on a GPU, device memory.
  const auto& views = layout_.views();
  routed_view_.assign(views.size(), false);
  for (size_t i = 0; i < views.size(); ++i) {
    const ParamView& v = views[i];
    if (v.kind != ParamKind::PARAM_KIND_WEIGHT || v.offset < head_end_ ||
        v.offset >= embeddings_begin_)
      continue;
    routed_view_[i] = true;
    if (grads_.memory().host_accessible)  // never written: give the pages back
      host_release_pages(grads_.data() + v.offset, v.numel * sizeof(float));
  }
  // The scratch holds the largest product: a run of routed views one fused matmul writes is
  // at most the longest run of adjacent routed views.
  size_t longest = 0;
  for (size_t i = 0; i < views.size();) {
    size_t j = i, n = 0;
    while (j < views.size() && routed_view_[j]) n += views[j++].numel;
    longest = std::max(longest, n);
    i = j + 1;
  }
  GOSSAMER_CHECK(longest > 0, "model: no block matrices to route");
  scratch_ = Buffer<float>(longest, *ops_.memory);
  routed_hook_ = std::move(on_ready);
}

float* DecoderModel::weight_grad(size_t offset, size_t n) {
  if (!routed_hook_) return grads_.data() + offset;
  const auto& views = layout_.views();
  const auto it = std::find_if(views.begin(), views.end(),
                               [&](const ParamView& v) { return v.offset == offset; });
  GOSSAMER_CHECK(it != views.end(), "model: no parameter starts at offset %zu", offset);
  if (!routed_view_[size_t(it - views.begin())]) return grads_.data() + offset;
  GOSSAMER_CHECK(n <= scratch_.size() && pending_end_ == pending_begin_,
                 "model: the gradient of %s (%zu elements) does not fit the routing scratch",
                 it->name.c_str(), n);
  zero(scratch_.data(), n);
  pending_begin_ = offset, pending_end_ = offset + n;
  return scratch_.data();
}

void DecoderModel::routed_done() {
  if (pending_end_ == pending_begin_) return;
  const auto& views = layout_.views();
  for (size_t i = 0; i < views.size(); ++i) {
    const ParamView& v = views[i];
    if (v.offset < pending_begin_ || v.offset >= pending_end_) continue;
    GOSSAMER_CHECK(routed_view_[i] && v.offset + v.numel <= pending_end_,
                   "model: a routed product covers %s only in part", v.name.c_str());
    routed_hook_(i, scratch_.data() + (v.offset - pending_begin_));
  }
  pending_begin_ = pending_end_ = 0;
}

void DecoderModel::check_tokens(const int32_t* tokens, const int32_t* targets, int n) const {
  for (int i = 0; i < n; ++i) {
    GOSSAMER_CHECK(tokens[i] >= 0 && tokens[i] < V_,
                   "model: input token %d at position %d is outside [0, vocab_size=%d)", tokens[i],
                   i, V_);
    if (targets)
      GOSSAMER_CHECK(targets[i] >= 0 && targets[i] < V_,
                     "model: target token %d at position %d is outside [0, vocab_size=%d)",
                     targets[i], i, V_);
  }
}

void DecoderModel::begin_forward(const int32_t* tokens, const int32_t* targets, int B, int T) {
  GOSSAMER_CHECK(B >= 1 && B <= max_B_ && T >= 1 && T <= max_T_,
                 "model: batch (%d, %d) exceeds the allocated (%d, %d)", B, T, max_B_, max_T_);
  const int N = B * T;
  check_tokens(tokens, targets, N);
  B_ = B, T_ = T;
  tokens_.upload(tokens, size_t(N));
  if (targets) targets_.upload(targets, size_t(N));
}

const float* DecoderModel::forward_to_hidden(const int32_t* tokens, const int32_t* targets, int B,
                                             int T) {
  logits_readable_ = false;
  backward_ready_ = false;
  begin_forward(tokens, targets, B, T);  // checks, copies tokens_ and targets_
  if (matmul_dtype_ == kernels::MatmulDtype::MATMUL_DTYPE_BF16)  // the weights as they are now
    ops_.to_bf16(params_bf16_.data(), params_.data(), params_.size());
  return forward_hidden(B, T);
}

float DecoderModel::forward(const int32_t* tokens, const int32_t* targets, int B, int T) {
  const float* hidden = forward_to_hidden(tokens, targets, B, T);
  if (targets == nullptr) {
    head_logits(hidden);
    logits_readable_ = true;
    return 0.0f;
  }
  const float loss = head_loss(hidden, /*with_gradients=*/true);
  backward_ready_ = true;
  return loss;
}

float DecoderModel::eval_loss(const int32_t* tokens, const int32_t* targets, int B, int T) {
  GOSSAMER_CHECK(targets != nullptr, "model: eval_loss() needs targets");
  return head_loss(forward_to_hidden(tokens, targets, B, T), /*with_gradients=*/false);
}

void DecoderModel::backward(float grad_scale, const GradReadyHook& hook) {
  GOSSAMER_CHECK(backward_ready_, "model: backward() needs a forward() with targets first");
  // The head's products were made in the forward for the mean loss; scaled here.
  const size_t N = size_t(B_) * T_;
  ops_.axpy(grads_.data() + lm_head_w_, grad_scale, head_grad_.data(), head_grad_.size());
  ops_.scale(dhidden_.data(), grad_scale, N * C_);
  backward_from_hidden(dhidden_.data(), hook);
  backward_ready_ = false;  // dhidden_ is spent: a new forward with targets is needed
}

float DecoderModel::head_loss(const float* hidden, bool with_gradients) {
  const int N = B_ * T_, R = head_chunk_rows();
  if (with_gradients) {
    if (head_grad_.size() == 0) {  // the first forward with targets
      dhidden_ = Buffer<float>(size_t(max_B_) * max_T_ * C_, *ops_.memory);
      head_grad_ = Buffer<float>(size_t(Vp_) * C_, *ops_.memory);
    }
    zero(dhidden_.data(), size_t(N) * C_);
    zero(head_grad_.data(), head_grad_.size());
  }
  float* chunk = head_out_.data();  // at least one chunk of rows
  head_backward_s_ = 0;
  for (int r = 0; r < N; r += R) {
    const int n = std::min(R, N - r);
    const float* h = hidden + size_t(r) * C_;
    const int32_t* targets = targets_.data() + r;
    linear_forward(chunk, h, lm_head_w_, nullptr, n, C_, Vp_);
    if (!with_gradients) {
      ops_.crossentropy_forward(losses_.data() + r, chunk, chunk, targets, n, V_, Vp_);
      continue;
    }
    ops_.crossentropy_forward_backward(losses_.data() + r, chunk, chunk, targets, 1.0f / float(N),
                                       n, V_, Vp_);  // the chunk holds dlogits
    const Stopwatch backward;
    linear_backward(dhidden_.data() + size_t(r) * C_, head_grad_.data(), nullptr, chunk, h,
                    lm_head_w_, n, C_, Vp_);
    head_backward_s_ += backward.seconds();
  }
  const float* losses = losses_.data();
  if (!losses_.memory().host_accessible) {
    losses_.download(losses_host_.data(), size_t(N));
    losses = losses_host_.data();
  }
  double sum = 0;
  for (int i = 0; i < N; ++i) sum += losses[i];
  return static_cast<float>(sum / N);
}

void DecoderModel::head_logits(const float* hidden) {
  head_backward_s_ = 0;                            // no gradient work in a forward without targets
  if (head_out_.size() < size_t(B_) * T_ * Vp_) {  // room for B_ rows of max_T_ positions
    head_out_ = Buffer<float>();
    head_out_ = Buffer<float>(size_t(B_) * max_T_ * Vp_, *ops_.memory);
  }
  linear_forward(head_out_.data(), hidden, lm_head_w_, nullptr, B_ * T_, C_, Vp_);
}

}  // namespace gossamer::model
