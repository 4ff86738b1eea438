// The subcommands of the gossamer binary (see commands.h): one function per subcommand, its
// flags and its action side by side.
#include "cli/commands.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/codec_bench.h"
#include "bench/comm_bench.h"
#include "bench/op_bench.h"
#include "bench/train_bench.h"
#include "commands/eval_command.h"
#include "commands/export_hf.h"
#include "commands/import_hf.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/rng.h"
#include "data/prep.h"
#include "data/tokenizer.h"
#include "eval/sampler.h"
#include "kernels/cpu/cpu_setup.h"
#include "model/model.h"
#include "run/model_source.h"
#include "run/run_config.h"
#include "sweep/runner.h"
#include "sweep/spec.h"
#include "train/inprocess_ranks.h"
#include "train/trainer.h"

namespace gossamer::cli {

namespace {

Subcommand add_train_command(CLI::App& app) {
  struct Args {
    std::string config, out, init_from;
    train::TrainStart start;
    std::vector<std::string> sets;
    int ranks = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("train", "train a model from a JSON run config");
  cmd->add_option("-c,--config", a->config, "run config (JSON)")->required();
  cmd->add_option("--set", a->sets, "override a config key: section.key=value")->take_all();
  cmd->add_option("--out", a->out, "run directory (overrides train.out_dir)");
  cmd->add_option("--resume", a->start.resume,
                  "resume from a checkpoint directory or a run directory (its newest intact "
                  "checkpoint)");
  cmd->add_option("--init-from", a->init_from,
                  "start from the weights of a checkpoint, run or Hugging Face model directory "
                  "(fresh optimizer, step 0); sets train.init_from");
  cmd->add_option("--allow-change", a->start.allow_change,
                  "with --resume: config keys of the run's definition (model, data, optimizer, "
                  "schedule, seed; or global_batch) that may differ from the checkpoint's")
      ->delimiter(',');
  CLI::Option* ranks =
      cmd->add_option("--ranks", a->ranks,
                      "run N ranks as threads of this process (no launcher), as `mpirun -np N` "
                      "would");
  cmd->add_flag("--overwrite", a->start.overwrite,
                "the run directory holds a run: move it aside (RUN.replaced-TIMESTAMP) and start "
                "afresh");
  return {cmd, [a, ranks] {
            const train::TrainStart& s = a->start;
            GOSSAMER_CHECK(s.resume.empty() || a->init_from.empty(),
                           "--init-from and --resume exclude each other (--resume restores the "
                           "optimizer and step too)");
            GOSSAMER_CHECK(!s.resume.empty() || s.allow_change.empty(),
                           "--allow-change goes with --resume (it names what may differ from "
                           "the checkpoint)");
            GOSSAMER_CHECK(s.resume.empty() || !s.overwrite,
                           "--overwrite and --resume exclude each other (--resume continues the "
                           "run in the directory)");
            std::vector<std::string> sets = a->sets;
            if (!a->out.empty()) sets.push_back("train.out_dir=" + nlohmann::json(a->out).dump());
            // Recorded in the run's config.json like the key it overrides.
            if (!a->init_from.empty())
              sets.push_back("train.init_from=" + nlohmann::json(a->init_from).dump());
            run::RunConfig config = run::load_run_config(a->config, sets);
            if (ranks->count() > 0) {
              config.parallel.ranks = a->ranks;
              return train::run_training_ranks(config, s, a->ranks, "--ranks");
            }
            if (config.parallel.ranks > 0)
              return train::run_training_ranks(config, s, config.parallel.ranks, "parallel.ranks");
            return train::run_training(config, s);
          }};
}

Subcommand add_prep_command(CLI::App& app) {
  struct Args {
    data::PrepOptions options;
    std::string spm_type = "bpe", docs = "blank-line";
  };
  auto a = std::make_shared<Args>();
  data::PrepOptions& o = a->options;
  CLI::App* cmd = app.add_subcommand("prep", "tokenize text files into token shards");
  auto* tok = cmd->add_option(
      "--tokenizer", o.tokenizer,
      "gpt2:DIR, spm:MODEL_FILE, or a GPT-2 tokenizer directory (encoder.json, vocab.bpe)");
  auto* train_spm = cmd->add_option(
      "--train-spm", o.train_spm.model_prefix,
      "SentencePiece: train a model on the inputs first, write PREFIX.model and PREFIX.vocab, "
      "and tokenize with it");
  tok->excludes(train_spm);
  cmd->add_option("--spm-vocab-size", o.train_spm.vocab_size,
                  "(with --train-spm) vocabulary size (default 8000)")
      ->needs(train_spm);
  cmd->add_option("--spm-type", a->spm_type, "(with --train-spm) bpe (default) or unigram")
      ->needs(train_spm);
  cmd->add_flag("--spm-byte-fallback", o.train_spm.byte_fallback,
                "(with --train-spm) encode characters outside the vocabulary as UTF-8 byte pieces")
      ->needs(train_spm);
  cmd->add_option("--output", o.output_prefix,
                  "output prefix: writes PREFIX_000000.bin, PREFIX_000001.bin, ...")
      ->required();
  cmd->add_option("--shard-tokens", o.shard_tokens, "tokens per shard at most");
  cmd->add_option("--docs", a->docs,
                  "document boundaries: blank-line (default) or file (one per input)");
  cmd->add_flag("--allow-binary", o.allow_binary,
                "tokenise inputs even when more than 10% of their bytes are invalid UTF-8 or "
                "control characters (refused by default)");
  cmd->add_option("inputs", o.inputs, "UTF-8 text files")->required();
  return {cmd, [a] {
            a->options.doc_split = data::parse_doc_split(a->docs);
            a->options.train_spm.model_type = data::parse_spm_model_type(a->spm_type);
            data::prep_run(a->options);
            return 0;
          }};
}

int generate_text(const std::string& checkpoint, const std::string& prompt_text,
                  const std::string& tokenizer, int tokens, const eval::SamplingOptions& sampling,
                  uint64_t seed, const std::string& device) {
  GOSSAMER_CHECK(tokens >= 1, "--tokens: must be >= 1, found %d", tokens);
  eval::check_sampling_options(sampling);  // before the (slow) model load
  const auto where = enum_from_name<kernels::cpu::KernelsDevice>(device);
  GOSSAMER_CHECK(where.has_value(), "--device %s: expected %s", device.c_str(),
                 enum_choices<kernels::cpu::KernelsDevice>().c_str());
  run::LoadedModel m =
      run::load_model_for_inference(checkpoint, 1, 0, tokenizer, true, *where, "--device");
  const data::Tokenizer* tok = m.tokenizer.get();
  std::vector<int32_t> prompt = {int32_t(tok->document_token())};
  for (uint32_t t : tok->encode(prompt_text)) prompt.push_back(int32_t(t));
  Rng rng(seed);
  std::fputs(prompt_text.c_str(), stdout);
  eval::generate(*m.model, prompt, tokens, sampling, rng, [&](int32_t t) {
    const std::string piece = tok->decode_token(uint32_t(t));
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  std::fputs("\n", stdout);
  return 0;
}

Subcommand add_generate_command(CLI::App& app) {
  struct Args {
    std::string checkpoint, prompt, tokenizer, device = "cpu";
    int tokens = 128;
    eval::SamplingOptions sampling{0.8, 40, 1.0};
    uint64_t seed = 42;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("generate", "sample text from a checkpoint");
  cmd->add_option("--checkpoint", a->checkpoint,
                  "checkpoint directory or run directory (its latest)")
      ->required();
  cmd->add_option("--prompt", a->prompt, "text to continue (after the tokenizer's document token)");
  cmd->add_option("--tokens", a->tokens, "tokens to generate")->capture_default_str();
  cmd->add_option("--temperature", a->sampling.temperature, "0: greedy")->capture_default_str();
  cmd->add_option("--top-k", a->sampling.top_k, "0: off")->capture_default_str();
  cmd->add_option("--top-p", a->sampling.top_p, "1: off")->capture_default_str();
  cmd->add_option("--seed", a->seed,
                  "sampling seed: the same seed, checkpoint and prompt give the same text; "
                  "change it for another sample")
      ->capture_default_str();
  cmd->add_option("--tokenizer", a->tokenizer,
                  "gpt2:DIR, spm:MODEL_FILE or a GPT-2 directory (default: the run's "
                  "data.tokenizer)");
  cmd->add_option("--device", a->device,
                  "where the model runs: cpu or cuda (not the checkpoint's kernels.device)")
      ->capture_default_str();
  return {cmd, [a] {
            return generate_text(a->checkpoint, a->prompt, a->tokenizer, a->tokens, a->sampling,
                                 a->seed, a->device);
          }};
}

Subcommand add_eval_command(CLI::App& app) {
  auto o = std::make_shared<commands::EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "validation loss / perplexity on shards, and HellaSwag-format accuracy");
  cmd->add_option("-c,--config", o->config, "run config (JSON): data and model")->required();
  cmd->add_option("--set", o->sets, "override a config key")->take_all();
  cmd->add_option("--checkpoint", o->checkpoint,
                  "checkpoint, run directory (its latest) or Hugging Face model directory")
      ->required();
  cmd->add_option("--data", o->data,
                  "token shards (files or globs; default: data.val, unless --hellaswag is "
                  "given): the loss over every complete window once");
  cmd->add_option("--hellaswag", o->choices,
                  "multiple-choice jsonl in HellaSwag's format (ctx, endings, label); alone, no "
                  "validation loss is computed (add --data for both)");
  cmd->add_option("--limit", o->choice_limit, "(with --hellaswag) score the first N examples only");
  cmd->add_flag("--json", o->json, "print the results as one JSON object (last line)");
  return {cmd, [o] { return commands::run_eval(*o); }};
}

// `bench` times training steps; `bench comm` (a sub-subcommand) the collectives, `bench codec`
// the zip codec, `bench ops` every op of the op table at the config's shapes.
Subcommand add_bench_command(CLI::App& app) {
  struct Args {
    std::string config;
    std::vector<std::string> sets;
    bench::BenchOptions train;
    bench::CommBenchOptions comm;
    bench::CodecBenchOptions codec;
    bench::OpBenchOptions ops;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("bench", "time training steps on synthetic tokens");
  cmd->add_option("-c,--config", a->config, "run config (JSON)");  // unless comm/codec: see check
  cmd->add_option("--set", a->sets, "override a config key")->take_all();
  cmd->add_option("--steps", a->train.steps, "timed steps");
  cmd->add_option("--warmup", a->train.warmup, "untimed steps first");
  cmd->require_subcommand(0, 1);
  bench::CommBenchOptions& c = a->comm;
  CLI::App* comm = cmd->add_subcommand(
      "comm", "communication benchmark, nccl-tests table (run under mpirun or srun)");
  comm->add_option("--backend", c.backend, "auto, mpi, nccl or single");
  comm->add_option("--ops", c.ops,
                   "comma-separated: all_reduce,reduce_scatter,all_gather,broadcast,sendrecv "
                   "(default), all_to_all")
      ->delimiter(',');
  comm->add_option("--dtype", c.dtype, "fp32 or bf16");
  comm->add_option("--min-bytes", c.min_bytes, "smallest size");
  comm->add_option("--max-bytes", c.max_bytes, "largest size");
  comm->add_option("--step-factor", c.step_factor, "size multiplier between rows");
  comm->add_option("--iters", c.iters, "timed iterations per size (median reported)");
  comm->add_option("--warmup", c.warmup, "untimed iterations first");
  comm->add_flag("--check,!--no-check", c.check,
                 "count wrong elements after each size (default on)");
  comm->add_option("--compression", c.compression,
                   "through the zip decorator: off (default: the backend itself), plain, on, "
                   "adaptive (parallel.compression)");
  comm->add_option("--compression-min-bytes", c.compression_min_bytes,
                   "parallel.compression_min_bytes");
  comm->add_option("--link-gbps", c.link_gbps, "parallel.link_gbps (0: measured)");
  comm->add_option("--codec-gbps", c.codec_gbps, "parallel.codec_gbps (0: measured)");
  bench::CodecBenchOptions& z = a->codec;
  CLI::App* codec = cmd->add_subcommand(
      "codec", "lossless codec benchmark: zip codec vs zstd-1 and lz4, ratio and GB/s");
  codec->add_option("--elements", z.elements, "elements per synthetic data set");
  codec->add_option("--iters", z.iters, "timed runs per measurement (median reported)");
  codec->add_option("--warmup", z.warmup, "untimed runs first");
  codec->add_option("--threads", z.threads,
                    "threads of the multi-thread columns (0: OpenMP's max threads)");
  codec->add_option("--chunk-elems", z.chunk_elems, "the codec's chunk size in elements");
  codec->add_flag("--checksum,!--no-checksum", z.checksum, "CRC-32C of every chunk (default on)");
  codec->add_option("--checkpoint", z.checkpoint,
                    "also measure a checkpoint's (or run directory's newest) parameters, "
                    "optimizer state and one gradient");
  bench::OpBenchOptions& o = a->ops;
  CLI::App* ops = cmd->add_subcommand(
      "ops",
      "every op of the op table at the config's model, micro_batch and seq_len, against "
      "its roofline (-c and --set as for bench; kernels.device picks the table)");
  ops->add_option("--iters", o.iters, "timed batches per op (median reported)");
  ops->add_option("--warmup", o.warmup, "untimed calls first");
  ops->add_option("--matmul-n", o.matmul_n, "the FLOP peak's product: n x n x n");
  ops->add_option("--copy-bytes", o.copy_bytes, "the bandwidth peak's copy, in bytes");
  ops->fallthrough();  // -c and --set are bench's: `gossamer bench ops -c CONFIG`
  Subcommand s{cmd, [a, comm, codec, ops] {
                 if (*comm) return bench::run_comm_bench(a->comm);
                 if (*codec) return bench::run_codec_bench(a->codec);
                 if (*ops)
                   return bench::run_ops_command(run::load_run_config(a->config, a->sets), a->ops);
                 return bench::run_train_bench(run::load_run_config(a->config, a->sets), a->train);
               }};
  s.check = [a, comm, codec] {
    if (!*comm && !*codec && a->config.empty()) throw CLI::RequiredError("--config");
  };
  return s;
}

Subcommand add_sweep_command(CLI::App& app) {
  struct Args {
    std::string file, out;
    std::vector<std::string> sets;
    sweep::SweepOptions options;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "run a grid or list of config overrides, one run directory each, and summarise");
  cmd->add_option("sweep-file", a->file,
                  "sweep (JSON): base config, overrides, launcher (docs/SWEEP.md)")
      ->required();
  cmd->add_option("--out", a->out, "sweep directory (overrides the file's \"out\")");
  cmd->add_option("--set", a->sets,
                  "override a config key of every point: section.key=value (joins the file's "
                  "\"set\"; not a key the grid or points vary)")
      ->take_all();
  cmd->add_flag("--dry-run", a->options.dry_run,
                "print each point, what would be done (run, resume, skip) and its command; write "
                "nothing");
  cmd->add_flag("--summarize-only", a->options.summarize_only,
                "only write summary.csv, summary.md and loss.png from the run directories");
  return {cmd, [a] {
            GOSSAMER_CHECK(!(a->options.dry_run && a->options.summarize_only),
                           "--dry-run and --summarize-only exclude each other");
            return sweep::run_sweep(sweep::load_sweep(a->file, a->out, a->sets), a->options);
          }};
}

Subcommand add_config_reference_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("config-reference", "print the run config reference");
  return {cmd, [] { return std::fputs(run::config_reference_markdown().c_str(), stdout), 0; }};
}

Subcommand add_export_hf_command(CLI::App& app) {
  struct Args {
    std::string checkpoint, hf_dir;
    commands::HfExportOptions options;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "export-hf",
      "write a Hugging Face model directory (config.json, model.safetensors, tokenizer)");
  cmd->add_option("checkpoint", a->checkpoint, "checkpoint directory or run directory (its latest)")
      ->required();
  cmd->add_option("hf-dir", a->hf_dir, "output directory (created)")->required();
  cmd->add_option("--tokenizer", a->options.tokenizer,
                  "tokenizer spec to export (default: the checkpoint's data.tokenizer)");
  cmd->add_flag("--no-tokenizer", a->options.no_tokenizer, "write no tokenizer files");
  cmd->add_flag("--force", a->options.force, "replace an existing export in hf-dir");
  return {cmd, [a] { return commands::export_hf(a->checkpoint, a->hf_dir, a->options), 0; }};
}

Subcommand add_import_hf_command(CLI::App& app) {
  struct Args {
    std::string hf_dir, checkpoint_dir;
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "import-hf", "turn a Hugging Face GPT-2/Llama directory into a checkpoint directory");
  cmd->add_option("hf-dir", a->hf_dir, "Hugging Face model directory")->required();
  cmd->add_option("checkpoint", a->checkpoint_dir, "output checkpoint directory (created)")
      ->required();
  cmd->add_flag("--force", a->force, "replace an existing checkpoint directory");
  return {cmd, [a] { return commands::import_hf(a->hf_dir, a->checkpoint_dir, a->force), 0; }};
}

}  // namespace

std::vector<Subcommand> add_subcommands(CLI::App& app) {
  return {add_train_command(app),
          add_prep_command(app),
          add_generate_command(app),
          add_eval_command(app),
          add_bench_command(app),
          add_sweep_command(app),
          add_config_reference_command(app),
          add_export_hf_command(app),
          add_import_hf_command(app)};
}

}  // namespace gossamer::cli
