// bench_cuda_ops: the time of every CUDA kernel at GPT-2 124M's training shapes (B = 16,
// T = 1024, C = 768, 12 heads, vocabulary 50257 padded to 50304), next to its roofline: the
// larger of (bytes it must move / the device's memory bandwidth) and (FLOPs / the fp32 matmul
// peak), both peaks measured in the same run (a 2 GiB device-to-device copy; an 8192^3 fp32
// product through our cuBLASLt matmul). Also the Llama ops at the same sizes, SCAPE's
// selection at 99% sparsity over the 124M parameters, the zip codec on 16M values, and an
// op-sum estimate of one GPT-2 124M training step (the measured op times added up; not a
// training run: no model on the device yet, fp32, flash-style fp32 attention, docs/CUDA.md).
// Bytes are each op's minimal traffic (every buffer read or written once, an accumulated "+="
// buffer both read and written), FLOPs the usual counts (matmul 2NCK, causal attention half of
// the full products). Median of 10 timed calls after 2 warm-ups, CUDA events on the ops'
// stream. Without a GPU it prints SKIPPED and exits 0 (scripts/gpu-check.sh runs it).
// Usage: bench_cuda_ops [--quick]   (--quick: B = 2, for a first look)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/zip/device_codec.h"
#include "core/rng.h"
#include "kernels/adam_step.h"
#include "kernels/cuda/adam.cuh"
#include "kernels/cuda/adam_sparse.cuh"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/crossentropy.cuh"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/encoder.cuh"
#include "kernels/cuda/gelu.cuh"
#include "kernels/cuda/layernorm.cuh"
#include "kernels/cuda/mask_score.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/memory.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/sparse_select.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/cuda/zip_chunks.cuh"

namespace {

namespace k = gossamer::kernels::cuda;

// Random device data: one pool of Gaussian floats, copied into every buffer (tiled).
class Device {
 public:
  Device() {
    std::vector<float> host(kPool);
    gossamer::Rng rng(1);
    for (auto& x : host) x = static_cast<float>(0.02 * rng.normal());
    GOSSAMER_CUDA_CHECK(cudaMalloc(&pool_, kPool * sizeof(float)));
    GOSSAMER_CUDA_CHECK(
        cudaMemcpy(pool_, host.data(), kPool * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~Device() {
    for (void* p : owned_) cudaFree(p);
    cudaFree(pool_);
  }
  float* floats(size_t n) {
    float* p = static_cast<float*>(alloc(n * sizeof(float)));
    for (size_t at = 0; at < n; at += kPool)
      GOSSAMER_CUDA_CHECK(cudaMemcpy(p + at, pool_, std::min(kPool, n - at) * sizeof(float),
                                     cudaMemcpyDeviceToDevice));
    return p;
  }
  template <class T>
  T* copy(const std::vector<T>& host) {
    T* p = static_cast<T*>(alloc(host.size() * sizeof(T)));
    GOSSAMER_CUDA_CHECK(
        cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return p;
  }
  void* alloc(size_t bytes) {
    void* p = nullptr;
    GOSSAMER_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    owned_.push_back(p);
    return p;
  }

 private:
  static constexpr size_t kPool = size_t{1} << 24;
  float* pool_ = nullptr;
  std::vector<void*> owned_;
};

// Median milliseconds of `iters` calls after `warmup`, each between two events on the stream.
double time_ms(const std::function<void()>& op, int warmup = 2, int iters = 10) {
  for (int i = 0; i < warmup; ++i) op();
  cudaEvent_t start, stop;
  GOSSAMER_CUDA_CHECK(cudaEventCreate(&start));
  GOSSAMER_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms(size_t(iters), 0.0f);
  for (auto& m : ms) {
    GOSSAMER_CUDA_CHECK(cudaEventRecord(start, k::stream()));
    op();
    GOSSAMER_CUDA_CHECK(cudaEventRecord(stop, k::stream()));
    GOSSAMER_CUDA_CHECK(cudaEventSynchronize(stop));
    GOSSAMER_CUDA_CHECK(cudaEventElapsedTime(&m, start, stop));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Row {
  std::string op, shape;
  double ms, bytes, flops;
};

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (k::visible_gpus() == 0) {
    std::printf("bench_cuda_ops: SKIPPED (no GPU visible: cudaGetDeviceCount)\n");
    return 0;
  }
  try {
    cudaDeviceProp prop{};
    GOSSAMER_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    Device dev;
    const int B = quick ? 2 : 16, T = 1024, C = 768, NH = 12, L = 12, V = 50257, Vp = 50304;
    const size_t N = size_t(B) * T;
    const double f = sizeof(float);

    // The peaks, measured: memory bandwidth (a copy reads and writes every byte) and the fp32
    // matmul throughput of our cuBLASLt path.
    const size_t copy_n = (size_t{2} << 30) / sizeof(float);
    float* src = dev.floats(copy_n);
    float* dst = dev.floats(copy_n);
    const double copy_ms = time_ms([&] {
      GOSSAMER_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, copy_n * sizeof(float), cudaMemcpyDeviceToDevice, k::stream()));
    });
    const double peak_bw = 2.0 * copy_n * f / (copy_ms * 1e-3);
    const int P = 8192;
    float* pa = dev.floats(size_t(P) * P);
    float* pb = dev.floats(size_t(P) * P);
    float* pc = dev.floats(size_t(P) * P);
    const double mm_ms = time_ms([&] { k::matmul_forward(pc, pa, pb, nullptr, P, P, P); }, 1, 5);
    const double peak_flops = 2.0 * P * double(P) * P / (mm_ms * 1e-3);

    // GPT-2 124M's buffers for one layer (reused by every row), the head and the parameters.
    std::vector<int32_t> tokens(N);
    gossamer::Rng rng(2);
    for (auto& t : tokens) t = int32_t(rng.below(uint64_t(V)));
    int32_t* d_tokens = dev.copy(tokens);
    float* x = dev.floats(N * C);
    float* y = dev.floats(N * C);
    float* dx = dev.floats(N * C);
    float* dy = dev.floats(N * C);
    float* mean = dev.floats(N);
    float* rstd = dev.floats(N);
    float* w = dev.floats(size_t(4) * C * C);  // the largest weight (fc: 4C x C)
    float* dw = dev.floats(size_t(4) * C * C);
    float* bias = dev.floats(size_t(4) * C);
    float* dbias = dev.floats(size_t(4) * C);
    float* h = dev.floats(N * 4 * C);  // qkv (3C) and fc (4C) activations
    float* dh = dev.floats(N * 4 * C);
    float* h2 = dev.floats(N * 4 * C);
    float* att_stats = dev.floats(size_t(B) * NH * T * 2);
    float* scratch = dev.floats(k::attention_scratch_size(B, T, NH));
    float* wte = dev.floats(size_t(Vp) * C);
    float* dwte = dev.floats(size_t(Vp) * C);
    float* wpe = dev.floats(size_t(T) * C);
    float* dwpe = dev.floats(size_t(T) * C);
    float* logits = dev.floats(N * Vp);
    float* losses = dev.floats(N);

    // The table's rows are printed as they are measured (a run cut short keeps them).
    std::printf("# bench_cuda_ops: %s, %d SMs, %.1f GiB; B = %d, T = %d (GPT-2 124M shapes)\n",
                prop.name, prop.multiProcessorCount, prop.totalGlobalMem / double(1 << 30), B, T);
    std::printf(
        "# measured peaks: memory %.0f GB/s (2 GiB device copy), fp32 matmul %.1f "
        "TFLOP/s (8192^3 through matmul_forward)\n",
        peak_bw / 1e9, peak_flops / 1e12);
    std::printf("| op | shape | ms | GB/s | TFLOP/s | roofline ms | of roofline |\n");
    std::printf("|---|---|--:|--:|--:|--:|--:|\n");
    std::fflush(stdout);
    auto row = [&](const std::string& op, const std::string& shape, double bytes, double flops,
                   const std::function<void()>& fn) {
      const Row r{op, shape, time_ms(fn), bytes, flops};
      const double roof = std::max(r.bytes / peak_bw, r.flops / peak_flops) * 1e3;
      std::printf("| %s | %s | %.3f | %.0f | %.2f | %.3f | %.0f%% |\n", r.op.c_str(),
                  r.shape.c_str(), r.ms, r.bytes / (r.ms * 1e-3) / 1e9,
                  r.flops / (r.ms * 1e-3) / 1e12, roof, 100.0 * roof / r.ms);
      std::fflush(stdout);
      return r.ms;
    };
    const std::string nc = std::to_string(N) + "x" + std::to_string(C);

    // One layer, forward then backward, and the head (the op-sum below adds them up).
    const double ln_forward_ms = row("layernorm_forward", nc, 2 * N * C * f, 0, [&] {
      k::layernorm_forward(y, mean, rstd, x, w, bias, int(N), C);
    });
    const double ln_backward_ms = row("layernorm_backward", nc, 4 * N * C * f, 0, [&] {
      k::layernorm_backward(dx, dw, dbias, dy, x, w, mean, rstd, int(N), C);
    });
    double fwd = 2 * ln_forward_ms, bwd = 2 * ln_backward_ms;  // two LayerNorms per layer
    struct Mm {
      const char* name;
      int in, out;
    };
    for (const Mm& m : {Mm{"qkv", C, 3 * C}, Mm{"attn proj", C, C}, Mm{"fc", C, 4 * C},
                        Mm{"fc proj", 4 * C, C}}) {
      const std::string shape =
          std::to_string(N) + "x" + std::to_string(m.in) + " -> " + std::to_string(m.out);
      const double io = N * double(m.in) + N * double(m.out), wt = double(m.in) * m.out;
      const float* in = m.in == C ? x : h2;
      float* out = m.in == C ? h : y;
      fwd += row(std::string("matmul_forward (") + m.name + ")", shape, (io + wt) * f,
                 2.0 * N * m.in * m.out,
                 [&] { k::matmul_forward(out, in, w, bias, int(N), m.in, m.out); });
      float* din = m.in == C ? dx : dh;
      const float* dout = m.in == C ? dh : dy;
      bwd += row(std::string("matmul_backward (") + m.name + ")", shape,
                 (io + 2 * N * double(m.in) + 3 * wt) * f, 4.0 * N * m.in * m.out,
                 [&] { k::matmul_backward(din, dw, dbias, dout, in, w, int(N), m.in, m.out); });
    }
    const double hs = C / NH, att_flops = 2.0 * B * NH * double(T) * T * hs;  // causal: half
    const double stats_bytes = double(B) * NH * T * 2 * f;  // flash-style: no (T, T) matrix
    const std::string bt = "B" + std::to_string(B) + " T" + std::to_string(T) + " NH12";
    fwd += row("attention_forward (fp32 flash)", bt, (N * 4.0 * C) * f + stats_bytes, att_flops,
               [&] { k::attention_forward(y, att_stats, h, B, T, C, NH, NH); });
    bwd +=
        row("attention_backward (fp32 flash)", bt, (N * 11.0 * C) * f + stats_bytes, 2 * att_flops,
            [&] { k::attention_backward(dh, scratch, dy, h, y, att_stats, B, T, C, NH, NH); });
    const std::string n4c = std::to_string(N) + "x" + std::to_string(4 * C);
    fwd += row("gelu_forward", n4c, 2 * N * 4.0 * C * f, 0,
               [&] { k::gelu_forward(h2, h, N * 4 * C); });
    bwd += row("gelu_backward", n4c, 4 * N * 4.0 * C * f, 0,
               [&] { k::gelu_backward(dh, h, h2, N * 4 * C); });
    const double add_ms =
        row("add (residual)", nc, 3 * N * C * f, 0, [&] { k::add(y, x, dx, N * C); });
    fwd += 2 * add_ms;  // the two residual additions
    // Backward adds into the residual stream's gradient inside the LayerNorms, and zeroes about
    // 14 B*T*C floats of its buffers per layer (gpt2.cpp).
    float* zeroed = dev.floats(14 * N * C);
    bwd += row("zero (a layer's backward buffers)", std::to_string(14 * N * C), 14 * N * C * f, 0,
               [&] { k::kMemory.zero(zeroed, 14 * N * C * sizeof(float)); });

    double head = 0;
    const std::string emb = "B" + std::to_string(B) + " T" + std::to_string(T) + " C768";
    head += row("encoder_forward", emb, (2.0 * N * C + double(T) * C) * f, 0,
                [&] { k::encoder_forward(x, d_tokens, wte, wpe, B, T, C); });
    head += row("encoder_backward", emb, (3.0 * N * C + 2.0 * T * C) * f, 0,
                [&] { k::encoder_backward(dwte, dwpe, dx, d_tokens, B, T, C); });
    const std::string lm = std::to_string(N) + "x768 -> 50304";
    head +=
        row("matmul_forward (lm head)", lm, (N * double(C) + N * double(Vp) + Vp * double(C)) * f,
            2.0 * N * C * Vp, [&] { k::matmul_forward(logits, x, wte, nullptr, int(N), C, Vp); });
    head += row("matmul_backward (lm head)", lm,
                (N * double(Vp) + 3 * N * double(C) + 3 * Vp * double(C)) * f, 4.0 * N * C * Vp,
                [&] { k::matmul_backward(dx, dwte, nullptr, logits, x, wte, int(N), C, Vp); });
    const std::string ce = std::to_string(N) + "x" + std::to_string(Vp);
    // Training runs the two in one kernel (the step's sum takes it); evaluation the forward.
    row("crossentropy_forward", ce, 2 * N * double(Vp) * f, 0,
        [&] { k::crossentropy_forward(losses, logits, logits, d_tokens, int(N), V, Vp); });
    row("crossentropy_backward", ce, 2 * N * double(Vp) * f, 0,
        [&] { k::crossentropy_backward(logits, logits, d_tokens, 1.0f / N, int(N), V, Vp); });
    head += row("crossentropy_forward_backward", ce, 2 * N * double(Vp) * f, 0, [&] {
      k::crossentropy_forward_backward(losses, logits, logits, d_tokens, 1.0f / N, int(N), V, Vp);
    });
    head += ln_forward_ms + ln_backward_ms;  // the final LayerNorm

    // The optimizer over GPT-2 124M's parameters, and SCAPE's selection at 99% sparsity.
    const size_t n_params = 124475904, n_keep = n_params / 100;
    float* p = dev.floats(n_params);
    float* g = dev.floats(n_params);
    float* m = dev.floats(n_params);
    float* v = dev.floats(n_params);
    const gossamer::kernels::AdamStep hp{
        .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .t = 10};
    const std::string np = std::to_string(n_params);
    const double optim_ms = row("adamw_update", np, 7.0 * n_params * f, 0,
                                [&] { k::adamw_update(p, g, m, v, n_params, hp); });
    row("adams_update", np, 5.0 * n_params * f, 0, [&] { k::adams_update(p, g, m, n_params, hp); });
    auto* idx = static_cast<uint32_t*>(dev.alloc(n_keep * sizeof(uint32_t)));
    const std::string topk = np + ", k = 1%";
    const double select_ms = row("top_k_indices", topk, 5.0 * n_params * f, 0,
                                 [&] { k::top_k_indices(g, n_params, n_keep, idx); });
    row("gather (pack)", topk, 3.0 * n_keep * f, 0, [&] { k::gather(v, g, idx, n_keep); });
    float* last = dev.floats(n_params);
    auto* decay = static_cast<uint8_t*>(dev.alloc(n_params));
    GOSSAMER_CUDA_CHECK(cudaMemset(decay, 1, n_params));
    const gossamer::kernels::IndexedAdamsState<float> st{.m = m, .last = last, .decay = decay};
    const double indexed_ms = row("adams_update_indexed", topk, 7.0 * n_keep * f, 0,
                                  [&] { k::adams_update_indexed(p, idx, idx, v, n_keep, st, hp); });
    // The rest of SCAPE's step at one rank with its defaults (src/optim/scape.cpp): the residual
    // (e += g and its norm), the mask score |b1 m + (1 - b1) e| with the age bonus, and the
    // residual zeroed at the mask.
    float* e = dev.floats(n_params);
    float* s = dev.floats(n_params);
    const double residual_ms = row("accumulate_sum_squares (residual)", np, 3.0 * n_params * f, 0,
                                   [&] { (void)k::accumulate_sum_squares(e, g, n_params); });
    const double score_ms = row("mask_score", np, 3.0 * n_params * f, 0,
                                [&] { k::mask_score(s, 0.9f, m, 0.1f, e, n_params); });
    const double bonus_ms = row("age_bonus", np, 3.0 * n_params * f, 0,
                                [&] { k::age_bonus(s, last, 0.01f, 10.0f, n_params); });
    const double settle_ms = row("scale_at (residual settled)", topk, 3.0 * n_keep * f, 0,
                                 [&] { k::scale_at(e, idx, n_keep, 0.0f); });
    const double pack_ms =
        row("gather (payload)", topk, 3.0 * n_keep * f, 0, [&] { k::gather(v, e, idx, n_keep); });
    const double scape_ms =
        residual_ms + score_ms + bonus_ms + select_ms + pack_ms + settle_ms + indexed_ms;

    // The Llama ops at the same sizes (qkv rows of 3C, 12 heads of 64; SwiGLU over 4C).
    row("rmsnorm_forward", nc, 2 * N * C * f, 0,
        [&] { k::rmsnorm_forward(y, rstd, x, w, int(N), C, 1e-5); });
    row("rmsnorm_backward", nc, 4 * N * C * f, 0,
        [&] { k::rmsnorm_backward(dx, dw, dy, x, w, rstd, int(N), C); });
    row("rope_forward (q, k)", bt, 4 * N * C * f, 0,
        [&] { k::rope_forward(h, B, T, 2 * NH, C / NH, 3 * C, 10000.0); });
    row("rope_backward (q, k)", bt, 4 * N * C * f, 0,
        [&] { k::rope_backward(dh, B, T, 2 * NH, C / NH, 3 * C, 10000.0); });
    row("swiglu_forward", std::to_string(N) + "x" + std::to_string(2 * C), 3 * N * 2.0 * C * f, 0,
        [&] { k::swiglu_forward(h2, h, int(N), 2 * C); });
    row("swiglu_backward", std::to_string(N) + "x" + std::to_string(2 * C), 7 * N * 2.0 * C * f, 0,
        [&] { k::swiglu_backward(dh, h2, h, int(N), 2 * C); });

    // The zip codec (kernels/cuda/zip_chunks.cu, one thread per chunk: correct before fast) on
    // 16M Gaussian values (the pool), in bf16 and fp32, chunks of 16,384: compress, and the
    // decode-add a compressed reduce-scatter runs. Bytes: the raw values read and the message
    // written (compress), the message read and the fp32 sums read and written (decode-add).
    namespace zip = gossamer::comm::zip;
    zip::DeviceZipCodec codec(k::kZipChunks);
    const size_t zn = size_t{1} << 24;
    float* zf = dev.floats(zn);
    uint16_t* zb = static_cast<uint16_t*>(dev.alloc(zn * 2));
    k::to_bf16(zb, zf, zn);
    float* zacc = dev.floats(zn);
    for (const gossamer::comm::DType dtype :
         {gossamer::comm::DType::BF16, gossamer::comm::DType::F32}) {
      const void* values = dtype == gossamer::comm::DType::BF16 ? static_cast<const void*>(zb) : zf;
      const size_t cap = zip::max_compressed_bytes(zn, dtype);
      uint8_t* message = static_cast<uint8_t*>(dev.alloc(cap));
      const size_t bytes = codec.compress(values, zn, dtype, message, cap);
      const double raw = double(zn) * gossamer::comm::dtype_size(dtype);
      char shape[64];
      std::snprintf(shape, sizeof shape, "16M %s, ratio %.3f", gossamer::comm::dtype_name(dtype),
                    raw / double(bytes));
      row("zip compress", shape, raw + double(bytes), 0,
          [&] { (void)codec.compress(values, zn, dtype, message, cap); });
      row("zip decompress_accumulate", shape, double(bytes) + 8.0 * zn, 0,
          [&] { codec.decompress_accumulate(message, bytes, zacc, zn, dtype, false); });
    }

    // zero_grad over the parameters (g is not read after this row).
    const double zero_grad_ms = row("zero_grad", np, n_params * f, 0,
                                    [&] { k::kMemory.zero(g, n_params * sizeof(float)); });

    // The op-sum estimate of one step: L layers forward and backward, the head, AdamW.
    const double step_ms = L * (fwd + bwd) + head + zero_grad_ms + optim_ms;
    const double flop_params = double(n_params) - double(T) * C - double(Vp - V) * C;
    const double step_tokens = double(N);
    const double model_flops = step_tokens * (6.0 * flop_params + 6.0 * L * C * T);
    std::printf(
        "\nop-sum estimate of one GPT-2 124M training step (fp32, flash-style fp32 attention, "
        "unfused; NOT a training run): %.1f ms = %d x (%.2f forward + %.2f backward) + "
        "%.2f head + %.2f zero_grad + %.2f AdamW; %.0f tokens/s; %.1f%% of the measured fp32 "
        "matmul peak, "
        "%.2f%% of the H200's 990 TFLOP/s bf16 spec. SCAPE's top-k at 99%%: %.2f ms "
        "(%.1f%% of the step); SCAPE's whole optimizer work at 99%% and one rank (residual, "
        "score, age bonus, top-k, payload, settle, indexed AdamS) %.2f ms (%.1f%% of the step, "
        "in place of AdamW's %.2f ms).\n",
        step_ms, L, fwd, bwd, head, zero_grad_ms, optim_ms, step_tokens / (step_ms * 1e-3),
        100.0 * model_flops / (step_ms * 1e-3) / peak_flops,
        100.0 * model_flops / (step_ms * 1e-3) / 990e12, select_ms, 100.0 * select_ms / step_ms,
        scape_ms, 100.0 * scape_ms / step_ms, optim_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}
