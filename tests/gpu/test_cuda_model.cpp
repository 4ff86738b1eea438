// The whole model on CUDA against the CPU (issue 16's model check): both families at the tiny
// test configurations' sizes (vocabulary 50257, padded to 50304; GQA for Llama; T = 63, not a
// multiple of 64; batch 1 and 3), the same seed: the initial weights bit for bit (drawn on the
// host, uploaded), the loss, every gradient (per tensor, within 1e-3 of that tensor's largest
// CPU gradient) and the logits of a forward without targets, all read back from the device
// through the CUDA memory. The model runs on the product table (kernels::cuda::ops()). The same
// with bf16 products on both sides (kernels.matmul_dtype = bf16): the same rounded operands up to
// an activation that rounds the other way after a different fp32 summation order, so looser
// bounds (loss 1e-3, gradients 2e-2 of each tensor's largest, logits 1e-2 of the largest).
// Without a GPU every test is SKIPPED, never passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/rng.h"
#include "kernels/cuda/cuda_context.cuh"
#include "kernels/cuda/ops_table.h"
#include "model/family.h"
#include "model/model.h"
#include "skip_without_gpu.h"

namespace {

using namespace gossamer;

std::vector<float> read_back(const float* device, size_t n) {
  std::vector<float> host(n);
  kernels::cuda::ops().memory->download(host.data(), device, n * sizeof(float));
  return host;
}

model::ModelConfig tiny(model::ModelFamily family) {
  model::ModelConfig cfg;
  cfg.family = family;
  cfg.n_layer = 2, cfg.n_head = 4, cfg.d_model = 64, cfg.vocab_size = 50257, cfg.max_seq_len = 64;
  if (family == model::ModelFamily::MODEL_FAMILY_LLAMA) cfg.n_kv_head = 2, cfg.d_ff = 192;
  return cfg;
}

struct Bounds {
  kernels::MatmulDtype dtype;
  double loss, grad, logits;  // loss: relative; grad, logits: of the largest CPU value
};

void check_model_against_cpu(const Bounds& bounds) {
  for (const model::ModelFamilyInfo& row : model::model_families()) {
    for (int B : {1, 3}) {
      const int T = 63;
      const model::ModelConfig cfg = tiny(row.family);
      auto cpu = model::make_model(cfg, B, T, kernels::cpu_ops(), bounds.dtype);
      auto gpu = model::make_model(cfg, B, T, kernels::cuda::ops(), bounds.dtype);
      cpu->init_weights(5);
      gpu->init_weights(5);
      const size_t n = cpu->params().size();
      const std::string what = std::string(model::family_name(row.family)) +
                               ", B = " + std::to_string(B) + ", " +
                               std::string(enum_name(bounds.dtype));
      const std::vector<float> w = read_back(gpu->params().data(), n);
      EXPECT_EQ(std::memcmp(w.data(), cpu->params().data(), n * sizeof(float)), 0)
          << what << ": initial weights";

      std::vector<int32_t> tokens(size_t(B) * T), targets(size_t(B) * T);
      Rng rng{uint64_t(B)};
      for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = int32_t(rng.below(50257));
        targets[i] = int32_t(rng.below(50257));
      }
      const float loss_cpu = cpu->forward(tokens.data(), targets.data(), B, T);
      const float loss_gpu = gpu->forward(tokens.data(), targets.data(), B, T);
      EXPECT_NEAR(loss_gpu, loss_cpu, bounds.loss * std::fabs(loss_cpu)) << what << ": loss";
      cpu->zero_grad();
      gpu->zero_grad();
      cpu->backward(1.0f);
      gpu->backward(1.0f);
      const std::vector<float> g = read_back(gpu->grads().data(), n);
      const float* gc = cpu->grads().data();
      for (const model::ParamView& v : cpu->layout().views()) {
        double largest = 0, worst = 0;
        for (size_t i = v.offset; i < v.offset + v.numel; ++i) {
          largest = std::max(largest, std::fabs(double(gc[i])));
          const double d = std::fabs(double(gc[i]) - g[i]);
          if (!(d <= worst)) worst = d;  // NaN sticks
        }
        EXPECT_LE(worst, bounds.grad * largest + 1e-12) << what << ": gradient of " << v.name;
      }
      cpu->forward(tokens.data(), nullptr, B, T);
      gpu->forward(tokens.data(), nullptr, B, T);
      const size_t nl = size_t(B) * T * cfg.padded_vocab_resolved();
      const std::vector<float> logits = read_back(gpu->logits(), nl);
      double worst = 0, largest = 0;
      for (size_t i = 0; i < nl; ++i) {
        const double d = std::fabs(double(cpu->logits()[i]) - logits[i]);
        if (!(d <= worst)) worst = d;  // NaN sticks
        largest = std::max(largest, std::fabs(double(cpu->logits()[i])));
      }
      const double bound = bounds.dtype == kernels::MatmulDtype::MATMUL_DTYPE_FP32
                               ? bounds.logits
                               : bounds.logits * largest;
      EXPECT_LE(worst, bound) << what << ": logits";
    }
  }
}

TEST(CudaModel, LossGradientsAndLogitsMatchCpu) {
  SKIP_WITHOUT_GPU();
  check_model_against_cpu({kernels::MatmulDtype::MATMUL_DTYPE_FP32, 1e-4, 1e-3, 1e-4});
}

TEST(CudaModel, Bf16ProductsTrackTheCpuBf16Model) {
  SKIP_WITHOUT_GPU();
  check_model_against_cpu({kernels::MatmulDtype::MATMUL_DTYPE_BF16, 1e-3, 2e-2, 1e-2});
}

}  // namespace
