// Training with the model's buffers and the optimizer's state in device memory, checked on the
// CPU: the guarded device table (guarded_device_ops.h) runs the CPU ops on memory that faults
// whenever host code touches it outside an op or an explicit copy. Whole runs of `train`
// (losses, gradient norms, validation, checkpoints, resume) must equal the same runs on the CPU
// table bit for bit, and a direct host read must be caught. Also the errors of kernels.device
// and the check of an uncommitted host edit of the parameters.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#ifdef GOSSAMER_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "core/buffer.h"
#include "core/rng.h"
#include "device_run_harness.h"
#include "eval/sampler.h"
#include "guarded_device_ops.h"
#include "model/host_params.h"
#include "model/model.h"
#include "run/run_config.h"
#include "test_util.h"
#include "train/trainer.h"

namespace {

namespace fs = std::filesystem;
using gossamer::testing::Corpus;
using gossamer::testing::expect_same_checkpoint;
using gossamer::testing::guarded_device_ops;
using gossamer::testing::metrics_of;
using gossamer::testing::run_json;
using gossamer::testing::TempDir;
using gossamer::testing::train_with;
using json = nlohmann::json;
namespace train = gossamer::train;

TEST(GuardedDevice, TheTableIsCompleteAndHostReadsAreCaught) {
  const gossamer::kernels::OpTable& ops = guarded_device_ops();
  ASSERT_EQ(gossamer::kernels::first_unset_op(ops), nullptr);
  ASSERT_FALSE(ops.memory->host_accessible);
  gossamer::Buffer<float> b(1000, *ops.memory);
  const std::vector<float> x(1000, 2.0f);
  b.upload(x.data(), x.size());
  EXPECT_EQ(ops.sum_squares(b.data(), b.size()), 4000.0);  // through an op: allowed
  float back = 0;
  b.download(&back, 1, 999);
  EXPECT_EQ(back, 2.0f);
  // A direct read from the host faults and is named.
  EXPECT_EXIT(
      {
        volatile float v = b.data()[10];
        (void)v;
        std::exit(0);
      },
      ::testing::ExitedWithCode(gossamer::testing::kHostTouchExitCode),
      "host code touched guarded device memory");
  // Host memory handed to an op (an illegal address on a GPU) is caught too.
  EXPECT_EXIT(
      {
        (void)ops.sum_squares(x.data(), x.size());
        std::exit(0);
      },
      ::testing::ExitedWithCode(gossamer::testing::kHostTouchExitCode), "was given host memory");
}

struct Case {
  const char* family;
  const char* optimizer;
  int zero_stage;
  const char* method = "{}";  // merged into the optimizer section (JSON)
  const char* label = "";     // added to the test's name
};

json config_for(const Case& c, const Corpus& corpus, const std::string& out_dir) {
  json j = run_json(corpus, c.family, c.optimizer, c.zero_stage, out_dir);
  j["optimizer"].update(json::parse(c.method), /*merge_objects=*/true);
  return j;
}

class DeviceTraining : public ::testing::TestWithParam<Case> {};

TEST_P(DeviceTraining, EqualsTheHostRunBitForBitAndResumes) {
  const Case c = GetParam();
  TempDir dir;
  const Corpus corpus = gossamer::testing::write_corpus(dir.path(), 500);
  const std::string host_dir = dir.file("host"), dev_dir = dir.file("device"),
                    resumed_dir = dir.file("resumed");
  ASSERT_EQ(train_with(config_for(c, corpus, host_dir), nullptr), 0);
  // The device run measures its MFU peak through the table's matmul.
  json dev_config = config_for(c, corpus, dev_dir);
  dev_config.erase("metrics");
  ASSERT_EQ(train_with(dev_config, &guarded_device_ops()), 0);

  const std::vector<json> host = metrics_of(host_dir), dev = metrics_of(dev_dir);
  ASSERT_EQ(host.size(), dev.size());
  ASSERT_GE(host.size(), 9u);  // 6 steps and 3 evaluations
  for (size_t i = 0; i < host.size(); ++i) EXPECT_EQ(host[i], dev[i]) << "metrics line " << i;
  for (const char* step : {"step_00000003", "step_00000006"})
    expect_same_checkpoint((fs::path(host_dir) / "checkpoints" / step).string(),
                           (fs::path(dev_dir) / "checkpoints" / step).string());

  // Resumed on the device from step 3: the same end, the checkpoint and optimizer state
  // uploaded from the file.
  fs::create_directories(resumed_dir + "/checkpoints");
  fs::copy(fs::path(dev_dir) / "checkpoints" / "step_00000003",
           fs::path(resumed_dir) / "checkpoints" / "step_00000003", fs::copy_options::recursive);
  fs::copy_file(fs::path(dev_dir) / "config.json", fs::path(resumed_dir) / "config.json");
  ASSERT_EQ(train_with(config_for(c, corpus, resumed_dir), &guarded_device_ops(), resumed_dir), 0);
  expect_same_checkpoint((fs::path(host_dir) / "checkpoints" / "step_00000006").string(),
                         (fs::path(resumed_dir) / "checkpoints" / "step_00000006").string());
}

INSTANTIATE_TEST_SUITE_P(
    Methods, DeviceTraining,
    ::testing::Values(Case{"gpt2", "adamw", 0}, Case{"llama", "adams", 0}, Case{"gpt2", "adams", 2},
                      Case{"llama", "diloco", 0},
                      // SCAPE with its defaults (reading A, the age normaliser and
                      // bonus), reading B, and the options with loops of their own.
                      Case{"gpt2", "scape", 0},
                      Case{"llama", "scape", 0,
                           R"({"scape": {"reading": "B", "catch_up_max": 4,
                                                "mask_encoding": "bitmap"}})",
                           "_reading_b"},
                      Case{"gpt2", "scape", 0,
                           R"({"scape": {"stale_momentum": true, "normaliser": "frozen",
                                                "mask_per_tensor": true, "mask_score": "gradient",
                                                "sparsity_ramp_steps": 2}})",
                           "_options"},
                      Case{"llama", "scape", 0,
                           R"({"scape": {"error_feedback": "momentum", "normaliser": "step",
                                                "residual_keeps_clipped": true,
                                                "log_selection_by_tensor": true}})",
                           "_momentum_feedback"},
                      // SMET and dst with a topology update every 2 steps (at 2, 4 and 6: the
                      // resume from step 3 crosses two), in blocks of 16 and of 1.
                      Case{"gpt2", "smet", 0, R"({"dst": {"update_interval": 2}})", "_topology"},
                      Case{"llama", "dst", 0,
                           R"({"dst": {"update_interval": 2, "density": 0.3, "block_size": 1}})",
                           "_blocks_of_1"},
                      Case{"llama", "local_adamw", 0}),
    [](const ::testing::TestParamInfo<Case>& i) {
      return std::string(i.param.family) + "_" + i.param.optimizer + "_zero" +
             std::to_string(i.param.zero_stage) + i.param.label;
    });

TEST(DeviceTraining, SamplingReadsTheLogitsBack) {
  gossamer::model::ModelConfig cfg;
  cfg.family = gossamer::model::ModelFamily::MODEL_FAMILY_GPT2;
  cfg.n_layer = 2, cfg.n_head = 4, cfg.d_model = 32, cfg.vocab_size = 500, cfg.max_seq_len = 16;
  auto host = gossamer::model::make_model(cfg, 1, 16, gossamer::kernels::cpu_ops());
  auto dev = gossamer::model::make_model(cfg, 1, 16, guarded_device_ops());
  host->init_weights(5);
  dev->init_weights(5);
  for (double temperature : {0.0, 0.9}) {
    gossamer::eval::SamplingOptions opt;
    opt.temperature = temperature;
    gossamer::Rng ra(3), rb(3);
    // 20 tokens from a window of 16: the context slides.
    const auto a = gossamer::eval::generate(*host, {1, 2, 3}, 20, opt, ra);
    const auto b = gossamer::eval::generate(*dev, {1, 2, 3}, 20, opt, rb);
    EXPECT_EQ(a, b) << "temperature " << temperature;
  }
}

// An edit of the parameters on the host that is never committed would be lost on a device and
// not on the CPU: it aborts on both, and an edit left by an exception does not.
TEST(DeviceTraining, AnUncommittedParameterEditAborts) {
  gossamer::model::ModelConfig cfg;
  cfg.n_layer = 1, cfg.n_head = 2, cfg.d_model = 16, cfg.vocab_size = 64, cfg.max_seq_len = 8;
  for (const gossamer::kernels::OpTable* ops :
       {&gossamer::kernels::cpu_ops(), &guarded_device_ops()}) {
    auto m = gossamer::model::make_model(cfg, 1, 8, *ops);
    EXPECT_DEATH({ gossamer::model::HostParamsEdit edit(*m, true); }, "never committed");
    EXPECT_THROW(
        {
          gossamer::model::HostParamsEdit edit(*m, true);
          throw std::runtime_error("a failed load");
        },
        std::runtime_error);
    {
      gossamer::model::HostParamsEdit edit(*m, true);
      edit.span()[0] = 0.5f;
      edit.commit();
    }
    float back = 0;
    m->memory().download(&back, m->params().data(), sizeof back);
    EXPECT_EQ(back, 0.5f) << ops->memory->backend;
  }
}

TEST(DeviceTraining, KernelsDeviceCudaNeedsABuildWithCudaAndAGpu) {
  TempDir dir;
  const Corpus corpus = gossamer::testing::write_corpus(dir.path(), 500);
  json config = run_json(corpus, "gpt2", "adamw", 0, dir.file("cuda"));
  config["kernels"]["device"] = "cuda";
#ifdef GOSSAMER_HAVE_CUDA
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0) GTEST_SKIP() << "a GPU is visible";
  gossamer::testing::expect_error([&] { train_with(config, nullptr); },
                                  {"kernels.device = cuda", "no GPU"});
#else
  gossamer::testing::expect_error([&] { train_with(config, nullptr); },
                                  {"kernels.device = cuda", "no CUDA backend"});
#endif
  config["kernels"]["device"] = "tpu";
  gossamer::testing::expect_error([&] { gossamer::run::parse_run_config(config, "test"); },
                                  {"kernels.device", "tpu"});
}

}  // namespace
