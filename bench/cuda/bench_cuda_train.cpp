// bench_cuda_train: tokens/s and MFU of real training steps on one GPU: GPT-2 124M (B = 16,
// T = 1024) and Llama ~500M (configs/llama-500m.json's shape, B = 4, T = 2048), on the product
// CUDA table (kernels::cuda::ops()): every step zeroes the gradients, runs forward and backward
// on a batch of synthetic tokens (uniform over the vocabulary, a fresh batch each step), clips by
// the global norm and applies AdamW, the trainer's step at one rank
// (single_device_training.h; losses are those of the fresh batches, not a learning check).
// Each shape twice: fp32 products, then bf16 products with fp32 accumulation
// (kernels.matmul_dtype = bf16); the rest fp32, fp32 flash-style attention: what the CUDA backend
// is today, not its target (docs/CUDA.md). Each phase is timed to completion (the loss comes back
// from forward; a one-float read-back after backward and after the update). One warm-up step,
// then timed steps until 10 or 15 s (four rows within gpu-check.sh's 120 s); the table gives
// medians. MFU = 6N + 6LCT FLOPs per token (model::flops_per_token) x tokens/s against two peaks:
// the fp32 matmul peak measured in the same run (a 4096^3 product through the table's matmul) and
// H200's 990 TFLOP/s dense bf16 spec. Without a GPU it prints SKIPPED and exits 0. --cpu-smoke runs
// the same program on the CPU table with a tiny model (what scripts/gpu-check.sh --dry-run does, so
// the program has run once before a GPU sees it). Usage: bench_cuda_train [--cpu-smoke]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cuda/single_device_training.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/median.h"
#include "core/rng.h"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/ops_table.h"
#include "kernels/matmul_peak.h"
#include "model/model.h"

namespace {

using namespace gossamer;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Waits for every op issued so far (a read-back completes after them: core/memory_ops.h).
void sync(const kernels::OpTable& ops, const float* device) {
  float probe;
  ops.memory->download(&probe, device, sizeof probe);
}

struct Shape {
  const char* name;
  model::ModelConfig config;
  int B, T;
};

struct Row {
  std::string name, products;
  size_t params = 0;
  int B = 0, T = 0, steps = 0;
  double fwd_ms = 0, bwd_ms = 0, optim_ms = 0, step_ms = 0, tokens_s = 0, flops_per_token = 0;
  float first_loss = 0, last_loss = 0;
};

Row run(const Shape& shape, kernels::MatmulDtype dtype, const kernels::OpTable& ops, int max_steps,
        double max_seconds) {
  auto m = model::make_model(shape.config, shape.B, shape.T, ops, dtype);
  m->init_weights(1);
  bench::SingleDeviceAdamW step(*m, ops, {.lr = 3e-4});
  const size_t n = size_t(shape.B) * shape.T;
  std::vector<int32_t> tokens(n), targets(n);
  Rng rng(2);
  Row row{shape.name, std::string(enum_name(dtype)), m->params().size(), shape.B, shape.T};
  row.flops_per_token = model::flops_per_token(*m, shape.T);
  std::vector<double> fwd, bwd, opt, total;
  const auto start = Clock::now();
  for (int s = 0; s <= max_steps; ++s) {  // step 0 warms up
    for (size_t i = 0; i < n; ++i) {
      tokens[i] = int32_t(rng.below(uint64_t(shape.config.vocab_size)));
      targets[i] = int32_t(rng.below(uint64_t(shape.config.vocab_size)));
    }
    // The step of single_device_training.h, phase by phase.
    const auto t0 = Clock::now();
    m->zero_grad();
    const float loss = m->forward(tokens.data(), targets.data(), shape.B, shape.T);
    const double t_fwd = seconds_since(t0);
    m->backward(1.0f);
    sync(ops, m->grads().data());
    const double t_bwd = seconds_since(t0) - t_fwd;
    step.update(s + 1);
    sync(ops, m->params().data());
    const double t_step = seconds_since(t0);
    if (s == 0) {
      row.first_loss = loss;
      continue;
    }
    fwd.push_back(t_fwd);
    bwd.push_back(t_bwd);
    opt.push_back(t_step - t_fwd - t_bwd);
    total.push_back(t_step);
    row.last_loss = loss;
    row.steps = s;
    if (seconds_since(start) > max_seconds) break;
  }
  row.fwd_ms = 1e3 * median(fwd);
  row.bwd_ms = 1e3 * median(bwd);
  row.optim_ms = 1e3 * median(opt);
  row.step_ms = 1e3 * median(total);
  row.tokens_s = double(n) / (row.step_ms / 1e3);
  return row;
}

model::ModelConfig gpt2_124m() {
  model::ModelConfig c;
  c.family = model::ModelFamily::MODEL_FAMILY_GPT2;
  c.n_layer = 12, c.n_head = 12, c.d_model = 768, c.vocab_size = 50257, c.max_seq_len = 1024;
  return c;
}
model::ModelConfig llama_500m() {
  model::ModelConfig c;
  c.family = model::ModelFamily::MODEL_FAMILY_LLAMA;
  c.n_layer = 22, c.n_head = 20, c.n_kv_head = 4, c.d_model = 1280, c.d_ff = 3584;
  c.vocab_size = 50257, c.max_seq_len = 2048;
  return c;
}
model::ModelConfig tiny(model::ModelFamily family) {
  model::ModelConfig c;
  c.family = family;
  c.n_layer = 2, c.n_head = 4, c.d_model = 64, c.vocab_size = 512, c.max_seq_len = 64;
  if (family == model::ModelFamily::MODEL_FAMILY_LLAMA) c.n_kv_head = 2, c.d_ff = 192;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const bool smoke = argc > 1 && std::strcmp(argv[1], "--cpu-smoke") == 0;
  if (argc > 1 && !smoke) {
    std::fprintf(stderr, "usage: bench_cuda_train [--cpu-smoke]\n");
    return 2;
  }
  if (!smoke && kernels::cuda::visible_gpus() == 0) {
    std::printf("bench_cuda_train: SKIPPED (no GPU visible: cudaGetDeviceCount)\n");
    return 0;
  }
  try {
    const kernels::OpTable& ops = smoke ? kernels::cpu_ops() : kernels::cuda::ops();
    const std::vector<Shape> shapes =
        smoke
            ? std::vector<Shape>{{"gpt2 tiny", tiny(model::ModelFamily::MODEL_FAMILY_GPT2), 2, 32},
                                 {"llama tiny", tiny(model::ModelFamily::MODEL_FAMILY_LLAMA), 2,
                                  32}}
            : std::vector<Shape>{{"GPT-2 124M", gpt2_124m(), 16, 1024},
                                 {"Llama ~500M", llama_500m(), 4, 2048}};
    const double peak = kernels::measure_matmul_gflops(ops, smoke ? 256 : 4096);
    std::printf("bench_cuda_train: %s table, fp32 matmul peak %.1f TFLOP/s (measured, %d^3)\n",
                smoke ? "CPU (smoke run)" : "CUDA", peak / 1e3, smoke ? 256 : 4096);
    std::printf(
        "\n| model | products | params | B x T | steps | fwd ms | bwd ms | optim ms | step ms | "
        "tokens/s | MFU vs fp32 peak | MFU vs H200 bf16 spec (990 TFLOP/s) | loss first -> last "
        "|\n"
        "|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
    for (const Shape& s : shapes) {
      for (auto dtype :
           {kernels::MatmulDtype::MATMUL_DTYPE_FP32, kernels::MatmulDtype::MATMUL_DTYPE_BF16}) {
        const Row r = run(s, dtype, ops, smoke ? 3 : 10, smoke ? 30.0 : 15.0);
        const double achieved = r.flops_per_token * r.tokens_s / 1e9;  // GFLOP/s
        std::printf(
            "| %s | %s | %.1f M | %d x %d | %d | %.1f | %.1f | %.1f | %.1f | %.0f | %.1f%% | "
            "%.2f%% | %.3f -> %.3f |\n",
            r.name.c_str(), r.products.c_str(), r.params / 1e6, r.B, r.T, r.steps, r.fwd_ms,
            r.bwd_ms, r.optim_ms, r.step_ms, r.tokens_s, 100.0 * achieved / peak,
            100.0 * achieved / 990e3, r.first_loss, r.last_loss);
        std::fflush(stdout);
      }
    }
    std::printf(
        "\nsteps: forward, backward, clip and AdamW at one rank; synthetic tokens; products fp32 "
        "or bf16 (fp32 accumulation), everything else fp32, flash-style fp32 attention "
        "(docs/CUDA.md). Each column is a median of its own: step ms is "
        "the "
        "median of whole steps, not the sum of the phases; fwd includes the tokens' check and "
        "upload\n");
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_cuda_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
