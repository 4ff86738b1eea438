// gossamer command line: one binary, one subcommand per job. The subcommands and their flags
// are the interface scripts rely on (tests/e2e/test_cli.sh checks them); errors print one line
// and exit non-zero.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/comm_bench.h"
#include "bench/train_bench.h"
#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/prep.h"
#include "data/tokenizer.h"
#include "eval/eval_command.h"
#include "eval/model_source.h"
#include "eval/sampler.h"
#include "hf/export.h"
#include "hf/import.h"
#include "hf/tokenizer_files.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "sweep/runner.h"
#include "sweep/spec.h"
#include "train/checkpoint.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace {

using namespace gossamer;

struct TrainArgs {
  std::string config, out, resume, init_from;
  std::vector<std::string> sets;
};

struct GenerateArgs {
  std::string checkpoint, prompt, tokenizer;
  int tokens = 128;
  eval::SamplingOptions sampling{0.8, 40, 1.0};
  uint64_t seed = 42;
};

struct ExportHfArgs {
  std::string checkpoint, hf_dir;
  hf::HfExportOptions options;
};

struct ImportHfArgs {
  std::string hf_dir, checkpoint_dir;
  bool force = false;
};

struct BenchArgs {
  std::string config;
  std::vector<std::string> sets;
  bench::BenchOptions options;
};

int cmd_train(const TrainArgs& a) {
  GOSSAMER_CHECK(a.resume.empty() || a.init_from.empty(),
                 "--init-from and --resume exclude each other (--resume restores the optimizer "
                 "and step too)");
  std::vector<std::string> sets = a.sets;
  if (!a.out.empty()) sets.push_back("train.out_dir=" + nlohmann::json(a.out).dump());
  train::RunConfig config = train::load_run_config(a.config, sets);
  return train::run_training(config, a.resume, a.init_from);
}

int cmd_generate(const GenerateArgs& a) {
  GOSSAMER_CHECK(a.tokens >= 1, "--tokens: must be >= 1, found %d", a.tokens);
  eval::LoadedModel m = eval::load_model_for_inference(a.checkpoint, 1, 0, a.tokenizer, true);
  model::Model* model = m.model.get();
  const data::Tokenizer* tok = m.tokenizer.get();
  std::vector<int32_t> prompt = {int32_t(tok->document_token())};
  for (uint32_t t : tok->encode(a.prompt)) prompt.push_back(int32_t(t));
  Rng rng(a.seed);
  std::fputs(a.prompt.c_str(), stdout);
  eval::generate(*model, prompt, a.tokens, a.sampling, rng, [&](int32_t t) {
    const std::string piece = tok->decode_token(uint32_t(t));
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  std::fputs("\n", stdout);
  return 0;
}

struct SweepArgs {
  std::string file, out;
  sweep::SweepOptions options;
};

int cmd_sweep(const SweepArgs& a) {
  GOSSAMER_CHECK(!(a.options.dry_run && a.options.summarize_only),
                 "--dry-run and --summarize-only exclude each other");
  return sweep::run_sweep(sweep::load_sweep(a.file, a.out), a.options);
}

int cmd_bench(const BenchArgs& a) {
  return bench::run_train_bench(train::load_run_config(a.config, a.sets), a.options);
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
  train_cmd->add_option("--init-from", train_args.init_from,
                        "start from the weights of a checkpoint, run or Hugging Face model "
                        "directory (fresh optimizer, step 0)");

  data::PrepOptions prep_args;
  auto* prep_cmd = app.add_subcommand("prep", "tokenize text files into token shards");
  auto* prep_tok = prep_cmd->add_option(
      "--tokenizer", prep_args.tokenizer,
      "gpt2:DIR, spm:MODEL_FILE, or a GPT-2 tokenizer directory (encoder.json, vocab.bpe)");
  auto* prep_train = prep_cmd->add_option(
      "--train-spm", prep_args.train_spm.model_prefix,
      "SentencePiece: train a model on the inputs first, write PREFIX.model and PREFIX.vocab, "
      "and tokenize with it");
  prep_tok->excludes(prep_train);
  prep_cmd
      ->add_option("--spm-vocab-size", prep_args.train_spm.vocab_size,
                   "(with --train-spm) vocabulary size (default 8000)")
      ->needs(prep_train);
  std::string prep_spm_type = "bpe";
  prep_cmd->add_option("--spm-type", prep_spm_type, "(with --train-spm) bpe (default) or unigram")
      ->needs(prep_train);
  prep_cmd
      ->add_flag("--spm-byte-fallback", prep_args.train_spm.byte_fallback,
                 "(with --train-spm) encode characters outside the vocabulary as UTF-8 byte pieces")
      ->needs(prep_train);
  prep_cmd
      ->add_option("--output", prep_args.output_prefix,
                   "output prefix: writes PREFIX_000000.bin, PREFIX_000001.bin, ...")
      ->required();
  prep_cmd->add_option("--shard-tokens", prep_args.shard_tokens, "tokens per shard at most");
  std::string prep_docs = "blank-line";
  prep_cmd->add_option("--docs", prep_docs,
                       "document boundaries: blank-line (default) or file (one per input)");
  prep_cmd->add_option("inputs", prep_args.inputs, "UTF-8 text files")->required();

  GenerateArgs gen_args;
  auto* gen_cmd = app.add_subcommand("generate", "sample text from a checkpoint");
  gen_cmd
      ->add_option("--checkpoint", gen_args.checkpoint,
                   "checkpoint directory or run directory (its latest)")
      ->required();
  gen_cmd->add_option("--prompt", gen_args.prompt,
                      "text to continue (after the tokenizer's document token)");
  gen_cmd->add_option("--tokens", gen_args.tokens, "tokens to generate");
  gen_cmd->add_option("--temperature", gen_args.sampling.temperature, "0: greedy");
  gen_cmd->add_option("--top-k", gen_args.sampling.top_k, "0: off");
  gen_cmd->add_option("--top-p", gen_args.sampling.top_p, "1: off");
  gen_cmd->add_option("--seed", gen_args.seed, "sampling seed");
  gen_cmd->add_option("--tokenizer", gen_args.tokenizer,
                      "gpt2:DIR, spm:MODEL_FILE or a GPT-2 directory (default: the run's "
                      "data.tokenizer)");

  eval::EvalOptions eval_args;
  auto* eval_cmd = app.add_subcommand(
      "eval", "validation loss / perplexity on shards, and HellaSwag-format accuracy");
  eval_cmd->add_option("-c,--config", eval_args.config, "run config (JSON): data and model")
      ->required();
  eval_cmd->add_option("--set", eval_args.sets, "override a config key")->take_all();
  eval_cmd
      ->add_option("--checkpoint", eval_args.checkpoint,
                   "checkpoint, run directory (its latest) or Hugging Face model directory")
      ->required();
  eval_cmd->add_option("--data", eval_args.data,
                       "token shards (files or globs; default: data.val): every complete "
                       "window once");
  eval_cmd->add_option("--hellaswag", eval_args.choices,
                       "multiple-choice jsonl in HellaSwag's format (ctx, endings, label)");
  eval_cmd->add_option("--limit", eval_args.choice_limit,
                       "(with --hellaswag) score the first N examples only");
  eval_cmd->add_flag("--json", eval_args.json, "print the results as one JSON object (last line)");

  BenchArgs bench_args;
  auto* bench_cmd = app.add_subcommand("bench", "time training steps on synthetic tokens");
  // -c is required unless the `comm` sub-subcommand is given (checked after parsing).
  bench_cmd->add_option("-c,--config", bench_args.config, "run config (JSON)");
  bench_cmd->add_option("--set", bench_args.sets, "override a config key")->take_all();
  bench_cmd->add_option("--steps", bench_args.options.steps, "timed steps");
  bench_cmd->add_option("--warmup", bench_args.options.warmup, "untimed steps first");
  bench_cmd->require_subcommand(0, 1);

  bench::CommBenchOptions comm_bench_args;
  auto* bench_comm_cmd = bench_cmd->add_subcommand(
      "comm", "communication benchmark, nccl-tests table (run under mpirun or srun)");
  bench_comm_cmd->add_option("--backend", comm_bench_args.backend, "auto, mpi, nccl or single");
  bench_comm_cmd
      ->add_option("--ops", comm_bench_args.ops,
                   "comma-separated: all_reduce,reduce_scatter,all_gather,broadcast,sendrecv")
      ->delimiter(',');
  bench_comm_cmd->add_option("--dtype", comm_bench_args.dtype, "fp32 or bf16");
  bench_comm_cmd->add_option("--min-bytes", comm_bench_args.min_bytes, "smallest size");
  bench_comm_cmd->add_option("--max-bytes", comm_bench_args.max_bytes, "largest size");
  bench_comm_cmd->add_option("--step-factor", comm_bench_args.step_factor,
                             "size multiplier between rows");
  bench_comm_cmd->add_option("--iters", comm_bench_args.iters,
                             "timed iterations per size (median reported)");
  bench_comm_cmd->add_option("--warmup", comm_bench_args.warmup, "untimed iterations first");
  bench_comm_cmd->add_flag("--check,!--no-check", comm_bench_args.check,
                           "count wrong elements after each size (default on)");

  SweepArgs sweep_args;
  auto* sweep_cmd = app.add_subcommand(
      "sweep", "run a grid or list of config overrides, one run directory each, and summarise");
  sweep_cmd
      ->add_option("sweep-file", sweep_args.file,
                   "sweep (JSON): base config, overrides, launcher (docs/SWEEP.md)")
      ->required();
  sweep_cmd->add_option("--out", sweep_args.out, "sweep directory (overrides the file's \"out\")");
  sweep_cmd->add_flag(
      "--dry-run", sweep_args.options.dry_run,
      "print each point, what would be done (run, resume, skip) and its command; write nothing");
  sweep_cmd->add_flag("--summarize-only", sweep_args.options.summarize_only,
                      "only write summary.csv, summary.md and loss.png from the run directories");

  auto* ref_cmd = app.add_subcommand("config-reference", "print the run config reference");

  ExportHfArgs export_args;
  auto* export_cmd = app.add_subcommand(
      "export-hf",
      "write a Hugging Face model directory (config.json, model.safetensors, tokenizer)");
  export_cmd
      ->add_option("checkpoint", export_args.checkpoint,
                   "checkpoint directory or run directory (its latest)")
      ->required();
  export_cmd->add_option("hf-dir", export_args.hf_dir, "output directory (created)")->required();
  export_cmd->add_option("--tokenizer", export_args.options.tokenizer,
                         "tokenizer spec to export (default: the checkpoint's data.tokenizer)");
  export_cmd->add_flag("--no-tokenizer", export_args.options.no_tokenizer,
                       "write no tokenizer files");
  export_cmd->add_flag("--force", export_args.options.force,
                       "replace an existing export in hf-dir");

  ImportHfArgs import_args;
  auto* import_cmd = app.add_subcommand(
      "import-hf", "turn a Hugging Face GPT-2/Llama directory into a checkpoint directory");
  import_cmd->add_option("hf-dir", import_args.hf_dir, "Hugging Face model directory")->required();
  import_cmd
      ->add_option("checkpoint", import_args.checkpoint_dir,
                   "output checkpoint directory (created)")
      ->required();
  import_cmd->add_flag("--force", import_args.force, "replace an existing checkpoint directory");

  try {
    app.parse(argc, argv);
    if (*bench_cmd && !*bench_comm_cmd && bench_args.config.empty())
      throw CLI::RequiredError("--config");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*train_cmd) return cmd_train(train_args);
    if (*prep_cmd) {
      prep_args.doc_split = data::parse_doc_split(prep_docs);
      prep_args.train_spm.model_type = data::parse_spm_model_type(prep_spm_type);
      data::prep_run(prep_args);
      return 0;
    }
    if (*gen_cmd) return cmd_generate(gen_args);
    if (*eval_cmd) return eval::run_eval(eval_args);
    if (*bench_comm_cmd) return bench::run_comm_bench(comm_bench_args);
    if (*bench_cmd) return cmd_bench(bench_args);
    if (*sweep_cmd) return cmd_sweep(sweep_args);
    if (*ref_cmd) return std::fputs(train::config_reference_markdown().c_str(), stdout), 0;
    if (*export_cmd)
      return hf::export_hf(export_args.checkpoint, export_args.hf_dir, export_args.options), 0;
    if (*import_cmd)
      return hf::import_hf(import_args.hf_dir, import_args.checkpoint_dir, import_args.force), 0;
  } catch (const gossamer::Error& e) {
    gossamer::log_error("%s", e.what());
    return 1;
  } catch (const std::exception& e) {
    gossamer::log_error("internal error: %s", e.what());
    return 2;
  }
  return 0;
}
