// gossamer command line: one binary, one subcommand per job. The subcommands and their flags
// are the interface scripts rely on (tests/e2e/test_cli.sh checks them); errors print one line
// and exit non-zero.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/gpt2_tokenizer.h"
#include "data/prep.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "train/bench_train.h"
#include "train/checkpoint.h"
#include "train/run_config.h"
#include "train/sampler.h"
#include "train/trainer.h"

namespace {

using namespace gossamer;

struct TrainArgs {
  std::string config, out, resume;
  std::vector<std::string> sets;
};

struct GenerateArgs {
  std::string checkpoint, prompt, tokenizer;
  int tokens = 128;
  train::SamplingOptions sampling{0.8, 40, 1.0};
  uint64_t seed = 42;
};

struct BenchArgs {
  std::string config;
  std::vector<std::string> sets;
  train::BenchOptions options;
};

int cmd_train(const TrainArgs& a) {
  std::vector<std::string> sets = a.sets;
  if (!a.out.empty()) sets.push_back("train.out_dir=" + nlohmann::json(a.out).dump());
  train::RunConfig config = train::load_run_config(a.config, sets);
  return train::run_training(config, a.resume);
}

int cmd_generate(const GenerateArgs& a) {
  const std::string ckpt = train::resolve_checkpoint(a.checkpoint);
  train::RunConfig config = train::parse_run_config(train::load_checkpoint_config(ckpt),
                                                    ckpt + "/trainer.json");
  train::configure_cpu_kernels(config.kernels);
  const auto tok = data::Gpt2Tokenizer::load(a.tokenizer.empty() ? config.data.tokenizer
                                                                  : a.tokenizer);
  GOSSAMER_CHECK(a.tokens >= 1, "--tokens: must be >= 1, found %d", a.tokens);
  auto model = model::make_model(config.model, 1, config.model.max_seq_len, kernels::cpu_ops());
  train::load_model_weights(ckpt, *model);
  std::vector<int32_t> prompt = {int32_t(tok.eot_token())};
  for (uint32_t t : tok.encode(a.prompt)) prompt.push_back(int32_t(t));
  Rng rng(a.seed);
  std::fputs(a.prompt.c_str(), stdout);
  train::generate(*model, prompt, a.tokens, a.sampling, rng, [&](int32_t t) {
    const uint32_t id = uint32_t(t);
    std::fputs(tok.decode(std::span<const uint32_t>(&id, 1)).c_str(), stdout);
    std::fflush(stdout);
  });
  std::fputs("\n", stdout);
  return 0;
}

int cmd_bench(const BenchArgs& a) {
  return train::run_train_bench(train::load_run_config(a.config, a.sets), a.options);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gossamer: pre-training GPT-2 with hand-written kernels"};
  app.set_version_flag("--version", GOSSAMER_VERSION);
  app.require_subcommand(1);

  TrainArgs train_args;
  auto* train_cmd = app.add_subcommand("train", "train a model from a JSON run config");
  train_cmd->add_option("-c,--config", train_args.config, "run config (JSON)")->required();
  train_cmd->add_option("--set", train_args.sets, "override a config key: section.key=value")
      ->take_all();
  train_cmd->add_option("--out", train_args.out, "run directory (overrides train.out_dir)");
  train_cmd->add_option("--resume", train_args.resume,
                        "resume from a checkpoint directory or a run directory (its latest)");

  data::PrepOptions prep_args;
  auto* prep_cmd = app.add_subcommand("prep", "tokenize text files into token shards");
  prep_cmd->add_option("--tokenizer", prep_args.tokenizer_dir,
                       "GPT-2 tokenizer directory (encoder.json, vocab.bpe)")
      ->required();
  prep_cmd->add_option("--output", prep_args.output_prefix,
                       "output prefix: writes PREFIX_000000.bin, PREFIX_000001.bin, ...")
      ->required();
  prep_cmd->add_option("--shard-tokens", prep_args.shard_tokens, "tokens per shard at most");
  std::string prep_docs = "blank-line";
  prep_cmd->add_option("--docs", prep_docs,
                       "document boundaries: blank-line (default) or file (one per input)");
  prep_cmd->add_option("inputs", prep_args.inputs, "UTF-8 text files")->required();

  GenerateArgs gen_args;
  auto* gen_cmd = app.add_subcommand("generate", "sample text from a checkpoint");
  gen_cmd->add_option("--checkpoint", gen_args.checkpoint,
                      "checkpoint directory or run directory (its latest)")
      ->required();
  gen_cmd->add_option("--prompt", gen_args.prompt, "text to continue (after <|endoftext|>)");
  gen_cmd->add_option("--tokens", gen_args.tokens, "tokens to generate");
  gen_cmd->add_option("--temperature", gen_args.sampling.temperature, "0: greedy");
  gen_cmd->add_option("--top-k", gen_args.sampling.top_k, "0: off");
  gen_cmd->add_option("--top-p", gen_args.sampling.top_p, "1: off");
  gen_cmd->add_option("--seed", gen_args.seed, "sampling seed");
  gen_cmd->add_option("--tokenizer", gen_args.tokenizer,
                      "tokenizer directory (default: the run's data.tokenizer)");

  BenchArgs bench_args;
  auto* bench_cmd = app.add_subcommand("bench", "time training steps on synthetic tokens");
  bench_cmd->add_option("-c,--config", bench_args.config, "run config (JSON)")->required();
  bench_cmd->add_option("--set", bench_args.sets, "override a config key")->take_all();
  bench_cmd->add_option("--steps", bench_args.options.steps, "timed steps");
  bench_cmd->add_option("--warmup", bench_args.options.warmup, "untimed steps first");

  auto* ref_cmd = app.add_subcommand("config-reference", "print the run config reference");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*train_cmd) return cmd_train(train_args);
    if (*prep_cmd) {
      prep_args.doc_split = data::parse_doc_split(prep_docs);
      data::prep_run(prep_args);
      return 0;
    }
    if (*gen_cmd) return cmd_generate(gen_args);
    if (*bench_cmd) return cmd_bench(bench_args);
    if (*ref_cmd) return std::fputs(train::config_reference_markdown().c_str(), stdout), 0;
  } catch (const gossamer::Error& e) {
    gossamer::log_error("%s", e.what());
    return 1;
  } catch (const std::exception& e) {
    gossamer::log_error("internal error: %s", e.what());
    return 2;
  }
  return 0;
}
