// The per-op benchmark's rows, timing and table (see op_bench.h). Needs only core, model and
// the op table, so that the GPU-only build (cmake/gpu_only.cmake) compiles it for bench_cuda_ops.
#include "bench/op_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/median.h"
#include "core/rng.h"
#include "core/timer.h"
#include "model/family.h"

namespace gossamer::bench {

namespace {

constexpr size_t kPool = size_t{1} << 22;  // Gaussian values, tiled into every buffer
constexpr double kF = sizeof(float);

std::string dims(std::initializer_list<size_t> d) {
  std::string s;
  for (size_t x : d) {
    if (!s.empty()) s += 'x';
    s += std::to_string(x);
  }
  return s;
}

// Median milliseconds per call: `warmup` calls, then `iters` batches of calls, each batch long
// enough (about batch_ms) that the final wait's cost is small next to it.
double time_per_call(OpBuffers& b, const std::function<void()>& run, const OpBenchOptions& o) {
  for (int i = 0; i < o.warmup; ++i) run();
  b.wait();
  Stopwatch once;
  run();
  b.wait();
  const double one_ms = once.seconds() * 1e3;
  const int calls = std::clamp(int(std::ceil(o.batch_ms / std::max(one_ms, 1e-4))), 1, 1000);
  std::vector<double> per_call;
  for (int i = 0; i < std::max(o.iters, 1); ++i) {
    Stopwatch watch;
    for (int c = 0; c < calls; ++c) run();
    b.wait();
    per_call.push_back(watch.seconds() * 1e3 / calls);
  }
  return median(per_call);
}

}  // namespace

OpBuffers::OpBuffers(const kernels::OpTable& ops) : ops_(ops) {
  std::vector<float> host(kPool);
  Rng rng(1);
  for (auto& x : host) x = static_cast<float>(0.02 * rng.normal());
  pool_ = static_cast<float*>(zeros(kPool * sizeof(float)));
  ops_.memory->upload(pool_, host.data(), kPool * sizeof(float));
  pool_n_ = kPool;
  fence_ = static_cast<float*>(zeros(sizeof(float)));
}

OpBuffers::~OpBuffers() {
  for (auto& [p, bytes] : owned_) ops_.memory->free(p, bytes);
}

void* OpBuffers::zeros(size_t bytes) {
  void* p = ops_.memory->alloc(bytes);
  owned_.emplace_back(p, bytes);
  return p;
}

float* OpBuffers::floats(size_t n) {
  auto* p = static_cast<float*>(zeros(n * sizeof(float)));
  for (size_t at = 0; at < n; at += pool_n_)
    ops_.memory->copy(p + at, pool_, std::min(pool_n_, n - at) * sizeof(float));
  return p;
}

void OpBuffers::wait() {
  float x = 0;
  ops_.memory->download(&x, fence_, sizeof x);
}

std::vector<OpRow> op_bench_rows(const OpShapes& s, OpBuffers& buf) {
  const kernels::OpTable& k = buf.ops();
  const model::ModelConfig& m = s.model;
  const bool llama = m.family == model::ModelFamily::MODEL_FAMILY_LLAMA;
  const int B = s.B, T = s.T, C = m.d_model, NH = m.n_head, NKV = m.n_kv_head_resolved();
  const int L = m.n_layer, V = m.vocab_size, Vp = m.padded_vocab_resolved(), F = m.d_ff_resolved();
  const int hs = C / NH, QKV = (NH + 2 * NKV) * hs;
  const int up = llama ? 2 * F : F;  // the MLP's first product: gate and up (SwiGLU), or fc
  const size_t N = size_t(B) * T;
  const size_t P = model::family_info(m.family).parameter_count(m);
  std::vector<OpRow> rows;
  auto row = [&](std::string op, std::string call, std::string shape, double bytes, double flops,
                 double per_step, std::function<void()> run) {
    rows.push_back(OpRow{std::move(op), std::move(call), std::move(shape), bytes, flops, per_step,
                         false, std::move(run)});
  };

  // Activations, reused by every row: rows of C, of the widest product output, and the head's.
  float* x = buf.floats(N * C);
  float* y = buf.floats(N * C);
  float* dx = buf.floats(N * C);
  float* dy = buf.floats(N * C);
  // (2F: SwiGLU's input is timed for either family)
  const size_t wide = N * size_t(std::max({QKV, 2 * F}));
  float* h = buf.floats(wide);
  float* h2 = buf.floats(wide);
  float* dh = buf.floats(wide);
  float* dh2 = buf.floats(wide);
  float* mean = buf.floats(N);
  float* rstd = buf.floats(N);
  const size_t wmax = size_t(C) * std::max({QKV, up, F, C});
  float* w = buf.floats(wmax);
  float* dw = buf.floats(wmax);
  float* bias = buf.floats(size_t(std::max({QKV, up, F, C})));
  float* dbias = buf.floats(size_t(std::max({QKV, up, F, C})));
  std::vector<int32_t> tokens(N);
  Rng rng(2);
  for (auto& t : tokens) t = int32_t(rng.below(uint64_t(V)));
  const int32_t* d_tokens = buf.copy(tokens);
  const std::string nc = dims({N, size_t(C)});
  char bt_text[96];
  std::snprintf(bt_text, sizeof bt_text, NKV != NH ? "B%d T%d NH%d NKV%d" : "B%d T%d NH%d", B, T,
                NH, NKV);
  const std::string bt = bt_text;

  // Embedding (GPT-2: token and position tables; Llama: token table only).
  float* wte = buf.floats(size_t(Vp) * C);
  float* dwte = buf.floats(size_t(Vp) * C);
  float* wpe = llama ? nullptr : buf.floats(size_t(T) * C);
  float* dwpe = llama ? nullptr : buf.floats(size_t(T) * C);
  const double pos = llama ? 0 : double(T) * C;
  row("encoder_forward", "", dims({size_t(B), size_t(T), size_t(C)}), (2.0 * N * C + pos) * kF, 0,
      1, [=] { k.encoder_forward(y, d_tokens, wte, wpe, B, T, C); });
  row("encoder_backward", "", dims({size_t(B), size_t(T), size_t(C)}), (3.0 * N * C + 2 * pos) * kF,
      0, 1, [=] { k.encoder_backward(dwte, dwpe, dx, d_tokens, B, T, C); });

  // Normalisation (both are timed; the family's own counts in the step): two per layer and the
  // final one.
  const double norms = 2.0 * L + 1;
  row("layernorm_forward", "", nc, 2.0 * N * C * kF, 0, llama ? 0 : norms,
      [=] { k.layernorm_forward(y, mean, rstd, x, w, bias, int(N), C); });
  row("layernorm_backward", "", nc, 4.0 * N * C * kF, 0, llama ? 0 : norms,
      [=] { k.layernorm_backward(dx, dw, dbias, dy, x, w, mean, rstd, int(N), C); });
  row("rmsnorm_forward", "", nc, 2.0 * N * C * kF, 0, llama ? norms : 0,
      [=] { k.rmsnorm_forward(y, rstd, x, w, int(N), C, m.norm_eps); });
  row("rmsnorm_backward", "", nc, 4.0 * N * C * kF, 0, llama ? norms : 0,
      [=] { k.rmsnorm_backward(dx, dw, dy, x, w, rstd, int(N), C); });

  // The layer's four products (Llama: no biases) and the LM head.
  struct Product {
    const char* call;
    int in, out;
    double per_step;
  };
  const Product products[] = {{"qkv", C, QKV, double(L)},
                              {"attention output", C, C, double(L)},
                              {llama ? "gate and up" : "fc", C, up, double(L)},
                              {llama ? "down" : "fc proj", F, C, double(L)}};
  float* b_or_null = llama ? nullptr : bias;
  float* db_or_null = llama ? nullptr : dbias;
  for (const Product& p : products) {
    const std::string shape = dims({N, size_t(p.in)}) + " -> " + std::to_string(p.out);
    const double io = double(N) * (p.in + p.out), wt = double(p.in) * p.out;
    const float* in = p.in == C ? x : h2;  // rows of C, or of the MLP's hidden width
    float* din = p.in == C ? dx : dh2;
    row("matmul_forward", p.call, shape, (io + wt) * kF, 2.0 * N * p.in * p.out, p.per_step,
        [=] { k.matmul_forward(h, in, w, b_or_null, int(N), p.in, p.out); });
    row("matmul_backward", p.call, shape, (io + 2.0 * N * p.in + 3 * wt) * kF,
        4.0 * N * p.in * p.out, p.per_step,
        [=] { k.matmul_backward(din, dw, db_or_null, dh, in, w, int(N), p.in, p.out); });
  }
  float* logits = buf.floats(N * Vp);
  float* probs = buf.floats(N * Vp);
  float* losses = buf.floats(N);
  const std::string lm = dims({N, size_t(C)}) + " -> " + std::to_string(Vp);
  row("matmul_forward", "LM head", lm, (double(N) * (C + Vp) + double(Vp) * C) * kF,
      2.0 * N * C * Vp, 1, [=] { k.matmul_forward(logits, x, wte, nullptr, int(N), C, Vp); });
  row("matmul_backward", "LM head", lm, (double(N) * Vp + 3.0 * N * C + 3.0 * Vp * C) * kF,
      4.0 * N * C * Vp, 1,
      [=] { k.matmul_backward(dx, dwte, nullptr, logits, x, wte, int(N), C, Vp); });
  // bf16 operands (kernels.matmul_dtype = bf16): the qkv product.
  auto* w16 = static_cast<uint16_t*>(buf.zeros(size_t(C) * QKV * 2));
  k.to_bf16(w16, w, size_t(C) * QKV);
  void* scratch16 = buf.zeros(k.matmul_bf16_scratch_bytes(int(N), C, QKV));
  const std::string qkv_shape = dims({N, size_t(C)}) + " -> " + std::to_string(QKV);
  const double qkv_io = double(N) * (C + QKV);
  row("matmul_bf16_forward", "qkv", qkv_shape, qkv_io * kF + double(C) * QKV * 2, 2.0 * N * C * QKV,
      0, [=] { k.matmul_bf16_forward(h, x, w16, b_or_null, int(N), C, QKV, scratch16); });
  row("matmul_bf16_backward", "qkv", qkv_shape,
      (qkv_io + 2.0 * N * C + 2.0 * C * QKV) * kF + double(C) * QKV * 2, 4.0 * N * C * QKV, 0,
      [=] { k.matmul_bf16_backward(dx, dw, db_or_null, dh, x, w16, int(N), C, QKV, scratch16); });

  // Attention (causal: half of the full products) and, for Llama, RoPE on q and k.
  float* saved = buf.floats(k.attention_saved_size(B, T, NH));
  float* att_scratch = buf.floats(k.attention_scratch_size(B, T, NH));
  const double att_flops = 2.0 * B * NH * double(T) * T * hs;
  row("attention_forward", "", bt, (double(N) * (QKV + C)) * kF, att_flops, L,
      [=] { k.attention_forward(y, saved, h, B, T, C, NH, NKV); });
  row("attention_backward", "", bt, (double(N) * (2 * QKV + 2 * C)) * kF, 2 * att_flops, L,
      [=] { k.attention_backward(dh, att_scratch, dy, h, y, saved, B, T, C, NH, NKV); });
  const double rope_elems = double(N) * (NH + NKV) * hs;
  row("rope_forward", "q and k", bt, 2 * rope_elems * kF, 0, llama ? L : 0,
      [=] { k.rope_forward(h, B, T, NH + NKV, hs, QKV, m.rope_theta); });
  row("rope_backward", "q and k", bt, 2 * rope_elems * kF, 0, llama ? L : 0,
      [=] { k.rope_backward(dh, B, T, NH + NKV, hs, QKV, m.rope_theta); });

  // The MLP's activation (both are timed; the family's own counts in the step).
  const std::string nf = dims({N, size_t(F)});
  row("swiglu_forward", "", nf, 3.0 * N * F * kF, 0, llama ? L : 0,
      [=] { k.swiglu_forward(h2, h, int(N), F); });
  row("swiglu_backward", "", nf, 5.0 * N * F * kF, 0, llama ? L : 0,
      [=] { k.swiglu_backward(dh, h2, h, int(N), F); });
  row("gelu_forward", "", nf, 2.0 * N * F * kF, 0, llama ? 0 : L,
      [=] { k.gelu_forward(h2, h, N * F); });
  row("gelu_backward", "", nf, 3.0 * N * F * kF, 0, llama ? 0 : L,
      [=] { k.gelu_backward(dh, h, h2, N * F); });

  // The loss: training runs forward and backward in one call; evaluation the forward.
  const std::string ce = dims({N, size_t(Vp)});
  row("crossentropy_forward_backward", "", ce, 2.0 * N * Vp * kF, 0, 1, [=] {
    k.crossentropy_forward_backward(losses, logits, logits, d_tokens, 1.0f / N, int(N), V, Vp);
  });
  row("crossentropy_forward", "", ce, 2.0 * N * Vp * kF, 0, 0,
      [=] { k.crossentropy_forward(losses, probs, logits, d_tokens, int(N), V, Vp); });
  row("crossentropy_backward", "", ce, 2.0 * N * Vp * kF, 0, 0,
      [=] { k.crossentropy_backward(logits, probs, d_tokens, 1.0f / N, int(N), V, Vp); });

  // Elementwise ops on the residual stream: the two residual additions per layer, the head's
  // gradient scaled and accumulated (DecoderModel::backward); the others informational.
  row("add", "residual", nc, 3.0 * N * C * kF, 0, 2.0 * L, [=] { k.add(y, x, dx, N * C); });
  row("accumulate", "", nc, 3.0 * N * C * kF, 0, 0, [=] { k.accumulate(dy, x, N * C); });
  row("scale", "hidden gradient", nc, 2.0 * N * C * kF, 0, 1, [=] { k.scale(dy, 1.0f, N * C); });
  row("axpy", "LM head gradient", dims({size_t(Vp), size_t(C)}), 3.0 * Vp * C * kF, 0, 1,
      [=] { k.axpy(dwte, 1.0f, wte, size_t(Vp) * C); });
  row("axpby", "", nc, 3.0 * N * C * kF, 0, 0, [=] { k.axpby(dy, 0.5f, x, 0.5f, N * C); });
  row("memory", "zero (a layer's backward buffers)", dims({14, N, size_t(C)}), 14.0 * N * C * kF, 0,
      L,
      [=, zeroed = buf.floats(14 * N * C)] { k.memory->zero(zeroed, 14 * N * C * sizeof(float)); });

  // The optimizer over the model's P parameters: the gradient's norm (the per-bucket check),
  // zeroing the gradient and AdamW in the step; AdamS, DiLoCo's outer step and the bf16 mirror
  // informational.
  float* p = buf.floats(P);
  float* g = buf.floats(P);
  float* mo = buf.floats(P);
  auto* v = static_cast<float*>(buf.zeros(P * sizeof(float)));  // a second moment: >= 0
  auto* sq = static_cast<double*>(buf.zeros(sizeof(double)));
  const kernels::AdamStep hp{
      .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .t = 10};
  const std::string np = std::to_string(P) + " parameters";
  row("sum_squares_to", "gradient norm", np, P * kF, 0, 1, [=] { k.sum_squares_to(sq, g, P); });
  row("sum_squares", "", np, P * kF, 0, 0, [=] { (void)k.sum_squares(g, P); });
  row("sum", "", np, P * kF, 0, 0, [=] { (void)k.sum(g, P); });
  row("adamw_update", "", np, 7.0 * P * kF, 0, 1, [=] { k.adamw_update(p, g, mo, v, P, hp); });
  row("adams_update", "", np, 5.0 * P * kF, 0, 0, [=] { k.adams_update(p, g, mo, P, hp); });
  row("nesterov_outer", "DiLoCo", np, 5.0 * P * kF, 0, 0,
      [=] { k.nesterov_outer(p, mo, g, 0.7f, 0.9f, P); });
  auto* p16 = static_cast<uint16_t*>(buf.zeros(P * 2));
  row("to_bf16", "parameters", np, P * (kF + 2), 0, 0, [=] { k.to_bf16(p16, p, P); });
  row("from_bf16", "parameters", np, P * (kF + 2), 0, 0, [=] { k.from_bf16(g, p16, P); });

  // SCAPE's per-step work at 99% sparsity and one rank (src/optim/scape.cpp): the residual
  // (e += g and its norm), the mask score |b1 m + (1 - b1) e| with the age bonus, the exact
  // top-k, the payload packed, the residual settled at the mask, AdamS on the k coordinates.
  const size_t K = std::max<size_t>(P / 100, 1);
  std::vector<uint32_t> host_idx(K);
  for (size_t j = 0; j < K; ++j) host_idx[j] = uint32_t(j * (P / K));
  const uint32_t* idx = buf.copy(host_idx);
  auto* selected = static_cast<uint32_t*>(buf.zeros(K * sizeof(uint32_t)));
  float* e = buf.floats(P);
  float* score = buf.floats(P);
  float* last = static_cast<float*>(buf.zeros(P * sizeof(float)));
  auto* decay = buf.copy(std::vector<uint8_t>(P, 1));
  float* packed = buf.floats(K);
  const std::string topk = np + ", k = 1%";
  const size_t first_scape = rows.size();
  row("accumulate_sum_squares", "residual", np, 3.0 * P * kF, 0, 0,
      [=] { (void)k.accumulate_sum_squares(e, g, P); });
  row("mask_score", "", np, 3.0 * P * kF, 0, 0, [=] { k.mask_score(score, 0.9f, mo, 0.1f, e, P); });
  row("age_bonus", "", np, 3.0 * P * kF, 0, 0, [=] { k.age_bonus(score, last, 0.01f, 10.0f, P); });
  row("top_k_indices", "", topk, P * kF + K * 4.0, 0, 0,
      [=] { k.top_k_indices(score, P, K, selected); });
  row("gather", "payload", topk, 2.0 * K * kF + K * 4.0, 0, 0,
      [=] { k.gather(packed, e, idx, K); });
  row("scale_at", "residual settled", topk, 2.0 * K * kF + K * 4.0, 0, 0,
      [=] { k.scale_at(e, idx, K, 0.0f); });
  const kernels::IndexedAdamsState<float> st{.m = mo, .last = last, .decay = decay};
  row("adams_update_indexed", "", topk, 7.0 * K * kF + 2 * K * 4.0, 0, 0,
      [=] { k.adams_update_indexed(p, idx, idx, packed, K, st, hp); });
  for (size_t r = first_scape; r < rows.size(); ++r) rows[r].scape = true;
  row("scatter", "", topk, 2.0 * K * kF + K * 4.0, 0, 0, [=] { k.scatter(e, packed, idx, K); });
  row("adams_update_from_momentum", "SCAPE reading B", topk, 8.0 * K * kF + 2 * K * 4.0, 0, 0,
      [=] { k.adams_update_from_momentum(p, idx, v, last, idx, packed, decay, K, hp); });

  // Dynamic sparse training (SMET) at density 1/2, blocks of 16, over the parameters.
  const size_t BS = 16, n_blocks = std::max<size_t>(P / BS / 2, 1);
  std::vector<int32_t> host_blocks(n_blocks);
  for (size_t j = 0; j < n_blocks; ++j) host_blocks[j] = int32_t(2 * j);
  const int32_t* blocks = buf.copy(host_blocks);
  auto* steps = buf.copy(std::vector<int32_t>(n_blocks, 10));
  auto* counts = static_cast<int32_t*>(buf.zeros(n_blocks * sizeof(int32_t)));
  auto* norms_out = static_cast<double*>(buf.zeros(n_blocks * sizeof(double)));
  float* compact = buf.floats(n_blocks * BS);
  const size_t active = n_blocks * BS;
  const std::string dst = np + ", density 1/2, blocks of 16";
  row("adamw_update_blocks", "", dst, 7.0 * active * kF, 0, 0, [=] {
    k.adamw_update_blocks(p, compact, mo, v, blocks, steps, n_blocks, BS, P, nullptr, hp);
  });
  row("accumulate_blocks", "", dst, 3.0 * active * kF, 0, 0,
      [=] { k.accumulate_blocks(compact, g, blocks, n_blocks, BS, P); });
  row("zero_blocks", "", dst, active * kF, 0, 0,
      [=] { k.zero_blocks(e, blocks, n_blocks, BS, P); });
  row("block_l1_norms", "", dst, active * kF, 0, 0,
      [=] { k.block_l1_norms(norms_out, p, blocks, n_blocks, BS, P); });
  row("increment_clamped", "block steps", std::to_string(n_blocks), 2.0 * n_blocks * 4, 0, 0,
      [=] { k.increment_clamped(counts, n_blocks, 1000); });
  row("assign_at", "block steps", std::to_string(n_blocks), 2.0 * n_blocks * 4, 0, 0,
      [=] { k.assign_at(counts, blocks, n_blocks / 2, 1); });

  // Piece-wise moves (ZeRO's shards, SMET's routed gradients): the parameters in 64 runs.
  const size_t n_runs = 64, run_n = P / n_runs;
  std::vector<kernels::CopyRun> host_runs(n_runs);
  for (size_t j = 0; j < n_runs; ++j) host_runs[j] = {j * run_n, j * run_n, run_n};
  const kernels::CopyRun* runs = buf.copy(host_runs);
  const std::string rn = np + " in 64 runs";
  row("copy_runs", "", rn, 2.0 * n_runs * run_n * kF, 0, 0,
      [=] { k.copy_runs(e, g, runs, n_runs); });
  row("accumulate_runs", "", rn, 3.0 * n_runs * run_n * kF, 0, 0,
      [=] { k.accumulate_runs(e, g, runs, n_runs); });
  row("memory", "zero_grad", np, P * kF, 0, 1, [=] { k.memory->zero(g, P * sizeof(float)); });
  return rows;
}

const std::vector<std::pair<std::string_view, std::string_view>>& untimed_ops() {
  static const std::vector<std::pair<std::string_view, std::string_view>> v = {
      {"backend", "the table's name"},
      {"matmul_bf16_scratch_bytes", "a size"},
      {"attention_saved_size", "a size"},
      {"attention_scratch_size", "a size"},
  };
  return v;
}

std::vector<std::string> ops_without_rows(const kernels::OpTable& ops,
                                          const std::vector<OpRow>& rows) {
  std::set<std::string, std::less<>> covered;
  for (const OpRow& r : rows) covered.insert(r.op);
  for (const auto& [name, why] : untimed_ops()) covered.insert(std::string(name));
  std::vector<std::string> missing;
  ops.for_each_op([&](const char* name, const auto&) {
    if (!covered.count(std::string_view(name))) missing.emplace_back(name);
  });
  return missing;
}

int run_op_bench(const OpShapes& shapes, OpBuffers& buffers, std::vector<OpRow> extra,
                 const OpBenchOptions& o) {
  const kernels::OpTable& k = buffers.ops();
  std::vector<OpRow> rows = op_bench_rows(shapes, buffers);
  const std::vector<std::string> missing = ops_without_rows(k, rows);
  if (!missing.empty()) {
    std::string names;
    for (const auto& n : missing) {
      if (!names.empty()) names += ", ";
      names += n;
    }
    std::fprintf(stderr,
                 "[error] bench ops: no row for op(s) %s of the %s table: add one to "
                 "op_bench_rows() or to untimed_ops() (bench/op_bench.cpp)\n",
                 names.c_str(), k.backend);
    return 1;
  }
  for (auto& r : extra) rows.push_back(std::move(r));

  // The peaks: a copy reads and writes every byte; an n^3 fp32 product.
  const size_t copy_n = o.copy_bytes / sizeof(float);
  float* src = buffers.floats(copy_n);
  float* dst = buffers.floats(copy_n);
  const double copy_ms = time_per_call(
      buffers, [&] { k.memory->copy(dst, src, copy_n * sizeof(float)); }, o);
  const double peak_bw = 2.0 * copy_n * kF / (copy_ms * 1e-3);
  const size_t n = size_t(o.matmul_n);
  float* a = buffers.floats(n * n);
  float* b = buffers.floats(n * n);
  float* c = buffers.floats(n * n);
  const double mm_ms = time_per_call(
      buffers, [&] { k.matmul_forward(c, a, b, nullptr, int(n), int(n), int(n)); }, o);
  const double peak_flops = 2.0 * double(n) * n * n / (mm_ms * 1e-3);

  const model::ModelConfig& m = shapes.model;
  std::printf("# bench ops: the %s op table; %s L%d C%d NH%d V%d, B = %d, T = %d\n", k.backend,
              model::family_name(m.family), m.n_layer, m.d_model, m.n_head, m.vocab_size, shapes.B,
              shapes.T);
  std::printf(
      "# measured peaks: memory %.1f GB/s (a %.0f MiB copy), fp32 matmul %.1f GFLOP/s "
      "(%zu^3 through matmul_forward); median of %d batches per row\n",
      peak_bw / 1e9, o.copy_bytes / double(1 << 20), peak_flops / 1e9, n, o.iters);
  std::printf(
      "| op | call | shape | per step | ms | GB/s | GFLOP/s | roofline ms | of roofline |\n");
  std::printf("|---|---|---|--:|--:|--:|--:|--:|--:|\n");
  std::fflush(stdout);
  double step_ms = 0, scape_ms = 0, adamw_ms = 0;
  for (const OpRow& r : rows) {
    const double ms = time_per_call(buffers, r.run, o);
    const double roof = std::max(r.bytes / peak_bw, r.flops / peak_flops) * 1e3;
    std::printf("| %s | %s | %s | %g | %.4f | %.1f | %.1f | %.4f | %.0f%% |\n", r.op.c_str(),
                r.call.c_str(), r.shape.c_str(), r.per_step, ms, r.bytes / (ms * 1e-3) / 1e9,
                r.flops / (ms * 1e-3) / 1e9, roof, 100.0 * roof / ms);
    std::fflush(stdout);
    step_ms += r.per_step * ms;
    if (r.scape) scape_ms += ms;
    if (r.op == "adamw_update") adamw_ms = ms;
  }
  const double tokens = double(shapes.B) * shapes.T;
  std::printf(
      "\nop-sum estimate of one training step (fp32; each row x its calls per step; NOT a "
      "training run): %.2f ms, %.0f tokens/s. SCAPE's optimizer work at 99%% sparsity and one "
      "rank: %.2f ms (%.1f%% of the step, in place of AdamW's %.2f ms).\n",
      step_ms, tokens / (step_ms * 1e-3), scape_ms, 100.0 * scape_ms / step_ms, adamw_ms);
  return 0;
}

}  // namespace gossamer::bench
