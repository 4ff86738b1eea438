// Twenty training steps on CUDA track the CPU's (issue 16's training check): both families at
// the tiny test configurations' sizes, the same seed and batches (a fresh random batch each
// step), the trainer's AdamW step at one rank (bench/cuda/single_device_training.h, checked
// against the trainer bit for bit on the CPU by tests/unit/test_single_device_training.cpp) on
// the product CUDA table and on the CPU table. fp32 on both sides with different summation
// orders, so the curves drift apart slowly: the first step's loss and gradient norm must agree
// within 1e-4 relative (as in the model test), every later step's within 5e-3 (tighter than the
// issue's bf16 tolerance: both sides are fp32), the loss must fall on both, and the final
// weights must agree within 1e-2 of the largest weight. Without a GPU every test is SKIPPED, never
// passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bench/cuda/single_device_training.h"
#include "core/rng.h"
#include "kernels/cuda/ops_table.h"
#include "model/family.h"
#include "model/host_params.h"
#include "skip_without_gpu.h"

namespace {

using namespace gossamer;

TEST(CudaTraining, TwentyStepsTrackTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const model::ModelFamilyInfo& row : model::model_families()) {
    model::ModelConfig cfg;
    cfg.family = row.family;
    cfg.n_layer = 2, cfg.n_head = 4, cfg.d_model = 64, cfg.vocab_size = 50257;
    cfg.max_seq_len = 64;
    if (row.family == model::ModelFamily::MODEL_FAMILY_LLAMA) cfg.n_kv_head = 2, cfg.d_ff = 192;
    const int B = 4, T = 63;
    auto cpu = model::make_model(cfg, B, T, kernels::cpu_ops());
    auto gpu = model::make_model(cfg, B, T, kernels::cuda::ops());
    cpu->init_weights(7);
    gpu->init_weights(7);
    const bench::AdamWSettings settings{.lr = 3e-3};
    bench::SingleDeviceAdamW cpu_step(*cpu, kernels::cpu_ops(), settings);
    bench::SingleDeviceAdamW gpu_step(*gpu, kernels::cuda::ops(), settings);
    const std::string family = model::family_name(row.family);

    // A small pool of sequences, visited in turn, so that the loss can fall in 20 steps.
    Rng rng(13);
    std::vector<int32_t> pool(size_t(8) * (T + 1));
    for (int32_t& x : pool) x = int32_t(rng.below(2000));
    std::vector<int32_t> tokens(size_t(B) * T), targets(size_t(B) * T);
    float first_cpu = 0, first_gpu = 0, last_cpu = 0, last_gpu = 0;
    for (int64_t t = 1; t <= 20; ++t) {
      for (int b = 0; b < B; ++b) {
        const int32_t* seq = pool.data() + size_t((t * B + b) % 8) * (T + 1);
        std::copy(seq, seq + T, tokens.begin() + ptrdiff_t(b) * T);
        std::copy(seq + 1, seq + T + 1, targets.begin() + ptrdiff_t(b) * T);
      }
      const bench::StepOutcome c = cpu_step.step(tokens.data(), targets.data(), B, T, t);
      const bench::StepOutcome g = gpu_step.step(tokens.data(), targets.data(), B, T, t);
      // Step 1 starts from identical weights (the model test's 1e-4); then the curves drift.
      const double tol = t == 1 ? 1e-4 : 5e-3;
      EXPECT_NEAR(g.loss, c.loss, tol * std::abs(c.loss)) << family << " step " << t;
      EXPECT_NEAR(g.grad_norm, c.grad_norm, tol * c.grad_norm) << family << " step " << t;
      if (t == 1) first_cpu = c.loss, first_gpu = g.loss;
      last_cpu = c.loss, last_gpu = g.loss;
    }
    EXPECT_LT(last_cpu, first_cpu - 0.5f) << family << ": the CPU run did not learn";
    EXPECT_LT(last_gpu, first_gpu - 0.5f) << family << ": the CUDA run did not learn";

    const model::HostParamsView gpu_weights(*gpu);
    const std::span<const float> a = cpu->params(), b = gpu_weights.span();
    float largest = 0, worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      largest = std::max(largest, std::abs(a[i]));
      worst = std::max(worst, std::abs(a[i] - b[i]));
    }
    EXPECT_LE(worst, 1e-2f * largest) << family << ": final weights";
  }
}

}  // namespace
