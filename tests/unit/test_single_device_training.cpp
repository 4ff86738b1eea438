// The GPU-only build's training step (bench/cuda/single_device_training.h, used by the CUDA
// training test and bench_cuda_train) against the trainer's own step on the CPU: the AdamW
// optimizer the registry builds (DataParallel with the AdamW rule, one rank, one bucket) driven
// by train_step(). Five steps of both families must give the same losses, gradient norms and
// parameters bit for bit, so that what the device script measures is the trainer's step.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "bench/cuda/single_device_training.h"
#include "comm/single_communicator.h"
#include "core/rng.h"
#include "model/family.h"
#include "optim/registry.h"
#include "train/train_step.h"

namespace {

using namespace gossamer;

TEST(SingleDeviceAdamW, EqualsTheTrainersAdamWAtOneRank) {
  for (const model::ModelFamilyInfo& row : model::model_families()) {
    model::ModelConfig cfg;
    cfg.family = row.family;
    cfg.n_layer = 2, cfg.n_head = 4, cfg.d_model = 32, cfg.vocab_size = 300, cfg.max_seq_len = 16;
    const int B = 2, T = 16;
    auto ours = model::make_model(cfg, B, T, kernels::cpu_ops());
    auto theirs = model::make_model(cfg, B, T, kernels::cpu_ops());
    ours->init_weights(3);
    theirs->init_weights(3);

    optim::OptimizerConfig oc;
    oc.name = "adamw";
    oc.lr = 1e-2, oc.grad_clip = 0.05;  // small enough that clipping acts
    optim::ParallelConfig par;
    par.bucket_mb = 1e6;  // one bucket: the trainer's norm is one sum_squares, as ours
    const auto comm = comm::make_single_communicator();
    auto opt =
        optim::make_optimizer({oc, par, theirs->layout(), kernels::cpu_ops(), *comm, *comm, 1, 5});
    train::attach_optimizer(*theirs, *opt);
    bench::SingleDeviceAdamW step(*ours, kernels::cpu_ops(),
                                  {.lr = oc.lr,
                                   .beta1 = oc.beta1,
                                   .beta2 = oc.beta2,
                                   .eps = oc.eps,
                                   .weight_decay = oc.weight_decay,
                                   .grad_clip = oc.grad_clip});

    Rng rng(9);
    std::vector<int32_t> tokens(size_t(B) * T), targets(size_t(B) * T);
    const std::string family = model::family_name(row.family);
    bool clipped = false;
    for (int64_t t = 1; t <= 5; ++t) {
      for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = int32_t(rng.below(300));
        targets[i] = int32_t(rng.below(300));
      }
      const bench::StepOutcome a = step.step(tokens.data(), targets.data(), B, T, t);
      const train::StepTimings b =
          train::train_step(*theirs, *opt, 1, B, T, tokens.data(), targets.data(),
                            [](int32_t*, int32_t*) {}, {t, oc.lr}, {});
      EXPECT_EQ(a.loss, float(b.local_loss)) << family << " step " << t;
      EXPECT_EQ(a.grad_norm, b.result.grad_norm) << family << " step " << t;
      clipped = clipped || a.grad_norm > oc.grad_clip;
    }
    EXPECT_TRUE(clipped) << family;
    const size_t n = ours->params().size();
    EXPECT_EQ(std::memcmp(ours->params().data(), theirs->params().data(), n * sizeof(float)), 0)
        << family << ": parameters after 5 steps";
  }
}

}  // namespace
