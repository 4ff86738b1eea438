// RunConfig: everything one training run needs, as typed sections. Each section lists its
// fields once in a visit() method with their documentation; that single list drives strict
// JSON parsing (unknown keys and wrong types are errors naming the JSON path), the resolved
// config written into the run directory, and the generated reference docs/CONFIG.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "data/data_config.h"
#include "kernels/cpu/cpu_setup.h"
#include "model/model_config.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer_config.h"
#include "optim/parallel_config.h"

namespace gossamer::run {

struct TrainConfig {
  int64_t steps = 100;
  int64_t global_batch_tokens = 0;
  int64_t eval_every = 50;
  int64_t eval_batches = 8;
  int64_t eval_replica_batches = 0;
  int64_t checkpoint_every = 0;
  int64_t keep_checkpoints = 2;
  int64_t log_every = 1;
  int64_t sample_every = 0;
  int64_t sample_tokens = 64;
  uint64_t seed = 1337;
  std::string out_dir = "runs/default";
  std::string init_from;

  // Resume metadata (run/resume_check.h): the value a checkpoint written before a key existed
  // ran with (added_later), and the keys whose change leaves the run the same run (harmless).
  template <class R>
  static void resume_keys(R& r) {
    for (const char* key :
         {"steps", "eval_every", "eval_batches", "eval_replica_batches", "checkpoint_every",
          "keep_checkpoints", "log_every", "sample_every", "sample_tokens", "out_dir", "init_from"})
      r.harmless(key);
    r.harmless("global_batch_tokens");  // the global batch itself is compared on its own
  }

  template <class V>
  void visit(V& v) {
    v("steps", steps, "optimizer steps to run");
    v("global_batch_tokens", global_batch_tokens,
      "tokens per optimizer step over all ranks; a multiple of micro_batch*seq_len*world (0: one "
      "micro-batch per rank)");
    v("eval_every", eval_every, "validation every N steps and at the last step (0: never)");
    v("eval_batches", eval_batches,
      "validation micro-batches of every rank per evaluation, i.e. eval_batches x micro_batch x "
      "ranks windows (0: the whole validation set)");
    v("eval_replica_batches", eval_replica_batches,
      "when the ranks' replicas differ (gossip, GASLoC, DiLoCo mid-round): validation "
      "micro-batches each rank evaluates its own replica on, for the replicas' losses (0: "
      "eval_batches x ranks, the windows the average's loss covers); the consensus distance "
      "needs none");
    v("checkpoint_every", checkpoint_every,
      "checkpoint every N steps; the last step is always checkpointed (0: only the last)");
    v("keep_checkpoints", keep_checkpoints,
      "checkpoints kept in the run directory (older ones are deleted; 0: keep all)");
    v("log_every", log_every,
      "print the progress line every N steps (metrics.jsonl gets every step)");
    v("sample_every", sample_every,
      "print a generated text sample every N steps and at the end (0: never)");
    v("sample_tokens", sample_tokens, "tokens per sample");
    v("seed", seed, "seed of the weight init, the data order and sampling");
    v("out_dir", out_dir,
      "run directory (config.json, metrics.jsonl, checkpoints); --out overrides");
    v("init_from", init_from,
      "start a new run from the weights of a checkpoint, a run directory (its newest intact "
      "checkpoint) or a Hugging Face model directory, with a fresh optimizer at step 0 (\"\": "
      "train.seed's initialisation); unused on --resume, which restores the checkpoint's "
      "weights; --init-from overrides");
  }
};

struct MetricsConfig {
  bool mfu = true;
  double peak_gflops = 0;

  // Resume metadata (run/resume_check.h): the value a checkpoint written before a key existed
  // ran with (added_later), and the keys whose change leaves the run the same run (harmless).
  template <class R>
  static void resume_keys(R& r) {
    r.harmless_section();
  }

  template <class V>
  void visit(V& v) {
    v("mfu", mfu,
      "report MFU (false: no start-up measurement of the peak and no MFU in the log or "
      "metrics.jsonl; for runs so small that the measurement costs more than the run)");
    v("peak_gflops", peak_gflops,
      "FLOP/s peak of one rank for MFU, in GFLOP/s (0: each rank measures, at start-up with its "
      "threads, the rate of its matrix products in their dtype: the best sgemm rate for fp32 "
      "on the CPU, the bf16 product's for kernels.matmul_dtype = bf16, the GPU's own product "
      "on a GPU); MFU = achieved / (peak x ranks)");
  }
};

struct RunConfig {
  model::ModelConfig model;
  data::DataConfig data;
  optim::OptimizerConfig optimizer;
  optim::ScheduleConfig schedule;
  TrainConfig train;
  kernels::cpu::KernelsConfig kernels;
  MetricsConfig metrics;
  optim::ParallelConfig parallel;

  template <class V>
  void visit_sections(V& v) {
    v.section("model", model);
    v.section("data", data);
    v.section("optimizer", optimizer);
    v.section("schedule", schedule);
    v.section("train", train);
    v.section("kernels", kernels);
    v.section("metrics", metrics);
    v.section("parallel", parallel);
  }

  // Invariants between fields (world = number of ranks); errors name the keys.
  void validate(int world = 1) const;
  // Micro-steps per optimizer step on each rank.
  int64_t grad_accum_steps(int world) const;
};

// Parses a JSON object into a RunConfig; `source` (a file name) prefixes every error.
RunConfig parse_run_config(const nlohmann::json& j, const std::string& source);
// Reads a JSON file, applies "a.b=value" overrides (value parsed as JSON, else as a string),
// parses strictly and validates for `world` ranks.
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides,
                          int world = 1);
nlohmann::json to_json(RunConfig& config);
// Rewrites a resolved config written by an older gossamer into today's form (optimizer keys that
// moved into method sections), for configs stored in checkpoints and run directories; a user's
// config with an old key is an error instead (naming the new key).
void migrate_legacy_config(nlohmann::json& config);
// The dotted path of every key a run config accepts ("optimizer.lr", "optimizer.scape.sparsity"),
// in reference order; method sections are listed whether the default method reads them or not.
std::vector<std::string> config_key_paths();
// Markdown reference of every key with its type, default and documentation.
std::string config_reference_markdown();

}  // namespace gossamer::run
