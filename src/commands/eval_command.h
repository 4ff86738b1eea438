// `gossamer eval`: validation loss / perplexity of a checkpoint (or run directory, or HF model
// directory) on token shards, and optionally a HellaSwag-format multiple-choice accuracy.
// The run config supplies the data side (data.val, seq_len, micro_batch, tokenizer); its model
// section must describe the checkpoint's model. Output: log lines on stderr, then on stdout
// one summary line, or with json one JSON object as the last line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gossamer::commands {

struct EvalOptions {
  std::string config;             // -c
  std::vector<std::string> sets;  // --set
  std::string checkpoint;         // --checkpoint
  std::string data;               // --data: shards (overrides data.val)
  std::string choices;            // --hellaswag: jsonl file
  int64_t choice_limit = 0;       // --limit: first N examples (0: all)
  bool json = false;              // --json
};

int run_eval(const EvalOptions& options);

}  // namespace gossamer::commands
