// Multiple-choice evaluation in HellaSwag's jsonl format, scored as the standard harnesses do:
// each ending is appended to the context and the model's log-likelihood of the ending's tokens
// is compared across endings. Two accuracies are reported: `acc` (largest summed
// log-likelihood) and `acc_norm` (largest mean log-likelihood per ending token, the
// length-normalised score llm.c's HellaSwag evaluation uses).
// Line format: {"ctx": str, "endings": [str, ...], "label": int} (HellaSwag's own files; "ctx"
// may be given as "context", or as "ctx_a" + "ctx_b"; a label may be a numeric string).
// Invariant: the context is [document token] + encode(ctx) and each ending is
// encode(" " + ending); a context too long for the model loses tokens at its start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "model/model.h"

namespace gossamer::eval {

struct ChoiceExample {
  std::string context;
  std::vector<std::string> endings;
  int label = 0;
  int64_t line = 0;  // 1-based line of the file, for messages
  std::string file;  // the file it was read from, for messages (may be empty)
};

// Reads every non-blank line; throws gossamer::Error "PATH:LINE: ..." for the first bad line
// (not JSON, a missing or mistyped field, fewer than two endings, an empty ending, a label
// outside [0, endings)) and for a file with no examples.
std::vector<ChoiceExample> read_choice_jsonl(const std::string& path);

struct ChoiceScores {
  std::vector<double> sum_logprob;  // per ending
  std::vector<int64_t> num_tokens;  // per ending
  int pred = 0;                     // argmax of sum_logprob (first on ties)
  int pred_norm = 0;                // argmax of sum_logprob / num_tokens (first on ties)
};

struct ChoiceResult {
  int64_t examples = 0;
  int64_t correct = 0;
  int64_t correct_norm = 0;
  double acc() const { return examples ? double(correct) / double(examples) : 0.0; }
  double acc_norm() const { return examples ? double(correct_norm) / double(examples) : 0.0; }
};

// Scores one example with one forward pass over its endings (batch = number of endings, which
// must be <= model.max_batch(); sequences up to model.max_seq()). Throws naming the line when
// an ending alone does not fit into the model's context.
ChoiceScores score_choice(model::Model& model, const data::Tokenizer& tokenizer,
                          const ChoiceExample& example);

// Scores every example (limit > 0: the first `limit`).
ChoiceResult evaluate_choices(model::Model& model, const data::Tokenizer& tokenizer,
                              const std::vector<ChoiceExample>& examples, int64_t limit = 0);

}  // namespace gossamer::eval
