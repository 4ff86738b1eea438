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
#include "data/shard.h"
#include "eval/sampler.h"
#include "guarded_device_ops.h"
#include "io/safetensors.h"
#include "model/host_params.h"
#include "model/model.h"
#include "test_util.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace {

namespace fs = std::filesystem;
using gossamer::testing::guarded_device_ops;
using gossamer::testing::TempDir;
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

// Shards of random tokens below `vocab`, a training set and a validation set.
struct Corpus {
  std::string train, val;
};
Corpus write_corpus(const TempDir& dir, uint32_t vocab) {
  gossamer::Rng rng(7);
  std::vector<uint32_t> tokens(6000);
  for (uint32_t& t : tokens) t = uint32_t(rng.next_u64() % vocab);
  const Corpus c{dir.file("train_000.bin"), dir.file("val_000.bin")};
  gossamer::data::write_shard(c.train, {tokens.data(), 5000});
  gossamer::data::write_shard(c.val, {tokens.data() + 5000, 1000});
  return c;
}

json run_json(const Corpus& corpus, const std::string& family, const std::string& optimizer,
              int zero_stage, const std::string& out_dir) {
  return {
      {"model",
       {{"family", family},
        {"n_layer", 2},
        {"n_head", 4},
        {"d_model", 32},
        {"vocab_size", 500},
        {"max_seq_len", 16}}},
      {"data",
       {{"train", corpus.train},
        {"val", corpus.val},
        {"seq_len", 16},
        {"micro_batch", 2},
        {"tokenizer", ""}}},
      {"optimizer", {{"name", optimizer}, {"lr", 3e-3}, {"weight_decay", 0.1}, {"grad_clip", 0.5}}},
      {"parallel", {{"zero_stage", zero_stage}}},
      {"schedule", {{"warmup_steps", 2}}},
      {"train",
       {{"steps", 6},
        {"global_batch_tokens", 64},  // two micro-batches per step
        {"eval_every", 3},
        {"eval_batches", 2},
        {"checkpoint_every", 3},
        {"keep_checkpoints", 0},
        {"log_every", 1},
        {"seed", 11},
        {"out_dir", out_dir}}},
      {"kernels", {{"threads", 1}}},
      {"metrics", {{"peak_gflops", 100.0}}},
  };
}

// Every line of metrics.jsonl without the fields that measure time.
std::vector<json> metrics_of(const std::string& run_dir) {
  std::vector<json> out;
  std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line);
    if (j.contains("mfu")) {
      EXPECT_GT(j["mfu"].get<double>(), 0.0) << line;
    }
    for (const char* timed : {"time_s", "tokens_per_s", "mfu", "comm"}) j.erase(timed);
    out.push_back(std::move(j));
  }
  return out;
}

// Every tensor of a safetensors file, by name, as raw bytes.
std::map<std::string, std::vector<uint8_t>> tensors_of(const std::string& file) {
  gossamer::io::SafetensorsReader r(file);
  std::map<std::string, std::vector<uint8_t>> out;
  for (const std::string& name : r.names()) {
    const auto* p = static_cast<const uint8_t*>(r.data(name));
    out[name].assign(p, p + r.info(name).nbytes());
  }
  return out;
}

void expect_same_checkpoint(const std::string& a, const std::string& b) {
  for (const char* f : {"model.safetensors", "optimizer.safetensors"}) {
    const auto ta = tensors_of((fs::path(a) / f).string()),
               tb = tensors_of((fs::path(b) / f).string());
    ASSERT_EQ(ta.size(), tb.size()) << f;
    for (const auto& [name, bytes] : ta) {
      ASSERT_TRUE(tb.count(name)) << f << " " << name;
      EXPECT_TRUE(bytes == tb.at(name)) << f << ": tensor " << name << " differs";
    }
  }
}

int train_with(const json& config, const gossamer::kernels::OpTable* ops,
               const std::string& resume = "") {
  train::TrainStart start;
  start.ops = ops;
  start.resume = resume;
  return train::run_training(train::parse_run_config(config, "test"), start);
}

struct Case {
  const char* family;
  const char* optimizer;
  int zero_stage;
};

class DeviceTraining : public ::testing::TestWithParam<Case> {};

TEST_P(DeviceTraining, EqualsTheHostRunBitForBitAndResumes) {
  const Case c = GetParam();
  TempDir dir;
  const Corpus corpus = write_corpus(dir, 500);
  const std::string host_dir = dir.file("host"), dev_dir = dir.file("device"),
                    resumed_dir = dir.file("resumed");
  ASSERT_EQ(train_with(run_json(corpus, c.family, c.optimizer, c.zero_stage, host_dir), nullptr),
            0);
  // The device run measures its MFU peak through the table's matmul.
  json dev_config = run_json(corpus, c.family, c.optimizer, c.zero_stage, dev_dir);
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
  ASSERT_EQ(train_with(run_json(corpus, c.family, c.optimizer, c.zero_stage, resumed_dir),
                       &guarded_device_ops(), resumed_dir),
            0);
  expect_same_checkpoint((fs::path(host_dir) / "checkpoints" / "step_00000006").string(),
                         (fs::path(resumed_dir) / "checkpoints" / "step_00000006").string());
}

INSTANTIATE_TEST_SUITE_P(Methods, DeviceTraining,
                         ::testing::Values(Case{"gpt2", "adamw", 0}, Case{"llama", "adams", 0},
                                           Case{"gpt2", "adams", 2}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.family) + "_" + i.param.optimizer + "_zero" +
                                  std::to_string(i.param.zero_stage);
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

TEST(DeviceTraining, RefusesWhatDoesNotRunThereYet) {
  TempDir dir;
  const Corpus corpus = write_corpus(dir, 500);
  json config = run_json(corpus, "gpt2", "scape", 0, dir.file("scape"));
  gossamer::testing::expect_error([&] { train_with(config, &guarded_device_ops()); },
                                  {"optimizer.name = \"scape\"", "kernels.device", "adamw"});
  EXPECT_FALSE(fs::exists(dir.file("scape") + "/metrics.jsonl"));
}

TEST(DeviceTraining, KernelsDeviceCudaNeedsABuildWithCudaAndAGpu) {
  TempDir dir;
  const Corpus corpus = write_corpus(dir, 500);
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
  gossamer::testing::expect_error([&] { train::parse_run_config(config, "test"); },
                                  {"kernels.device", "tpu"});
}

}  // namespace
