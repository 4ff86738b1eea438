// Whole training runs in this process for the device-memory tests (tests/unit/
// test_device_training.cpp at one rank, tests/mpi/test_device_data_parallel_mpi.cpp at several):
// a corpus of random tokens, a tiny run's config, and the comparisons that make two runs equal
// (metrics.jsonl line for line without the timed fields, checkpoints tensor for tensor). Test
// code; header-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "core/rng.h"
#include "data/shard.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "run/run_config.h"
#include "train/trainer.h"

namespace gossamer::testing {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Shards of random tokens below `vocab`, a training set and a validation set.
struct Corpus {
  std::string train, val;
};
inline Corpus corpus_in(const std::string& dir) {
  return {dir + "/train_000.bin", dir + "/val_000.bin"};
}
inline Corpus write_corpus(const std::string& dir, uint32_t vocab) {
  Rng rng(7);
  std::vector<uint32_t> tokens(6000);
  for (uint32_t& t : tokens) t = uint32_t(rng.next_u64() % vocab);
  const Corpus c = corpus_in(dir);
  data::write_shard(c.train, {tokens.data(), 5000});
  data::write_shard(c.val, {tokens.data() + 5000, 1000});
  return c;
}

// Six steps of two micro-batches per rank, evaluations and checkpoints at steps 3 and 6; DiLoCo
// with rounds of 2 steps (step 3 is inside a round).
inline json run_json(const Corpus& corpus, const std::string& family, const std::string& optimizer,
                     int zero_stage, const std::string& out_dir, int world = 1) {
  json j = {
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
        {"global_batch_tokens", 64 * world},  // two micro-batches per step
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
  if (optimizer == "diloco") j["optimizer"]["diloco"] = {{"local_steps", 2}};
  return j;
}

// Every line of metrics.jsonl without the fields that measure time (the ranks' waits too).
inline std::vector<json> metrics_of(const std::string& run_dir) {
  std::vector<json> out;
  std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line);
    if (j.contains("mfu")) {
      EXPECT_GT(j["mfu"].get<double>(), 0.0) << line;
    }
    for (const char* timed : {"time_s", "tokens_per_s", "mfu", "comm"}) j.erase(timed);
    if (j.contains("ranks"))
      for (json& r : j["ranks"]) r.erase("wait_s");
    if (j.contains("optim"))  // SCAPE's mask exchange
      for (const char* timed : {"mask_wait_s", "mask_exchange_s"}) j["optim"].erase(timed);
    out.push_back(std::move(j));
  }
  return out;
}

// Every tensor of a safetensors file, by name, as raw bytes.
inline std::map<std::string, std::vector<uint8_t>> tensors_of(const std::string& file) {
  io::SafetensorsReader r(file);
  std::map<std::string, std::vector<uint8_t>> out;
  for (const std::string& name : r.names()) {
    const auto* p = static_cast<const uint8_t*>(r.data(name));
    out[name].assign(p, p + r.info(name).nbytes());
  }
  return out;
}

inline void expect_same_checkpoint(const std::string& a, const std::string& b) {
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

// A whole run of `train` in this process; `ops`: null for the CPU table; `buffer_comm`: the
// communicator for device buffers at several ranks (TrainStart::buffer_comm).
inline int train_with(
    const json& config, const kernels::OpTable* ops, const std::string& resume = "",
    std::function<std::unique_ptr<comm::Communicator>(comm::Communicator&)> buffer_comm = nullptr) {
  train::TrainStart start;
  start.ops = ops;
  start.resume = resume;
  start.buffer_comm = std::move(buffer_comm);
  return train::run_training(run::parse_run_config(config, "test"), start);
}

}  // namespace gossamer::testing
