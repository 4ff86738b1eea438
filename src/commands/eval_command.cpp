// run_eval(): loads the model, evaluates every window of the shards once, then the
// multiple-choice file, and prints the summary.
#include "commands/eval_command.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/buffer.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "data/loader.h"
#include "eval/evaluate.h"
#include "eval/multiple_choice.h"
#include "model/model_config_json.h"
#include "run/model_source.h"
#include "run/run_config.h"

namespace gossamer::commands {

int run_eval(const EvalOptions& o) {
  const run::RunConfig config = run::load_run_config(o.config, o.sets);
  // The validation loss over data.val by default; with --hellaswag only when --data asks for
  // it too (the multiple choice alone is what was asked for).
  const std::string shards = !o.data.empty() ? o.data : o.choices.empty() ? config.data.val : "";
  GOSSAMER_CHECK(!shards.empty() || !o.choices.empty(),
                 "%s: nothing to evaluate: data.val is empty; pass --data SHARDS or --hellaswag "
                 "FILE",
                 o.config.c_str());
  GOSSAMER_CHECK(o.choice_limit >= 0, "--limit %lld: expected a number of examples >= 0 (0: all)",
                 (long long)o.choice_limit);
  GOSSAMER_CHECK(o.choice_limit == 0 || !o.choices.empty(),
                 "--limit %lld: applies to --hellaswag, which is not given",
                 (long long)o.choice_limit);
  const int B = config.data.micro_batch, T = config.data.seq_len;

  // Inputs that can fail are opened before the (slow) model load.
  std::optional<data::DataLoader> loader;
  if (!shards.empty())
    loader.emplace(data::expand_shard_patterns(shards), T, config.train.seed, false,
                   uint32_t(config.model.vocab_size));
  std::vector<eval::ChoiceExample> examples;
  if (!o.choices.empty()) examples = eval::read_choice_jsonl(o.choices);
  int max_endings = 0;
  for (const eval::ChoiceExample& e : examples)
    max_endings = std::max(max_endings, int(e.endings.size()));

  const int max_seq = examples.empty() ? T : config.model.max_seq_len;
  run::LoadedModel m = run::load_model_for_inference(
      o.checkpoint, std::max(B, max_endings), max_seq, config.data.tokenizer, !examples.empty(),
      config.kernels.device, "kernels.device");
  const std::string diff = model::model_config_difference(config.model, m.config.model);
  GOSSAMER_CHECK(diff.empty(), "%s: the config's model differs from the checkpoint %s (%s)",
                 o.config.c_str(), m.path.c_str(), diff.c_str());
  log_info("eval: model %s (%s, %zu parameters)", m.path.c_str(),
           model::family_name(m.config.model.family), m.model->layout().total());

  nlohmann::ordered_json out;
  out["checkpoint"] = m.path;
  std::string summary;
  if (loader) {
    GOSSAMER_CHECK(loader->num_windows() > 0, "--data %s: no complete window of %d tokens",
                   shards.c_str(), T + 1);
    Stopwatch w;
    HostBuffer<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    const eval::EvalResult r =
        eval::evaluate(*m.model, *loader, B, 0, inputs.data(), targets.data());
    log_info("eval: %lld windows of %d tokens from %s in %.1f s", (long long)r.windows, T + 1,
             shards.c_str(), w.seconds());
    out["data"] = shards;
    out["val_loss"] = r.loss;
    out["perplexity"] = std::exp(r.loss);
    out["tokens"] = r.tokens;
    out["windows"] = r.windows;
    summary += strprintf("val_loss %.6f perplexity %.4f tokens %lld", r.loss, std::exp(r.loss),
                         (long long)r.tokens);
  }
  if (!examples.empty()) {
    Stopwatch w;
    const eval::ChoiceResult r =
        eval::evaluate_choices(*m.model, *m.tokenizer, examples, o.choice_limit);
    log_info("eval: %lld multiple-choice examples from %s in %.1f s", (long long)r.examples,
             o.choices.c_str(), w.seconds());
    out["hellaswag_file"] = o.choices;
    out["hellaswag_examples"] = r.examples;
    out["hellaswag_acc"] = r.acc();
    out["hellaswag_acc_norm"] = r.acc_norm();
    summary += strprintf("%shellaswag_acc %.4f hellaswag_acc_norm %.4f examples %lld",
                         summary.empty() ? "" : " ", r.acc(), r.acc_norm(), (long long)r.examples);
  }
  if (o.json)
    std::printf("%s\n", out.dump().c_str());
  else
    std::printf("%s\n", summary.c_str());
  return 0;
}

}  // namespace gossamer::commands
