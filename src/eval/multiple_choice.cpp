// HellaSwag-format reader and log-likelihood scoring (see multiple_choice.h).
#include "eval/multiple_choice.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace gossamer::eval {

namespace {

using json = nlohmann::json;

std::string context_of(const json& j, const std::string& where) {
  for (const char* key : {"ctx", "context"}) {
    if (!j.contains(key)) continue;
    GOSSAMER_CHECK(j[key].is_string(), "%s: \"%s\" must be a string", where.c_str(), key);
    return j[key].get<std::string>();
  }
  GOSSAMER_CHECK(j.contains("ctx_a") && j["ctx_a"].is_string(),
                 "%s: no context: expected a string field \"ctx\" (or \"context\", or \"ctx_a\" "
                 "and \"ctx_b\")",
                 where.c_str());
  std::string ctx = j["ctx_a"].get<std::string>();
  if (j.contains("ctx_b")) {
    GOSSAMER_CHECK(j["ctx_b"].is_string(), "%s: \"ctx_b\" must be a string", where.c_str());
    const std::string b = j["ctx_b"].get<std::string>();
    if (!b.empty()) ctx += " " + b;
  }
  return ctx;
}

int label_of(const json& j, const std::string& where) {
  GOSSAMER_CHECK(j.contains("label"), "%s: missing field \"label\"", where.c_str());
  const json& l = j["label"];
  if (l.is_number_integer()) return l.get<int>();
  if (l.is_string()) {
    const std::string s = l.get<std::string>();
    GOSSAMER_CHECK(!s.empty() && s.size() < 9 && std::all_of(s.begin(), s.end(), ::isdigit),
                   "%s: \"label\" must be an integer, found \"%s\"", where.c_str(), s.c_str());
    return std::stoi(s);
  }
  fail("%s: \"label\" must be an integer, found %s", where.c_str(), l.dump().c_str());
}

// "FILE:LINE" of an example (or "line LINE" when it was not read from a file).
std::string where_of(const ChoiceExample& e) {
  return e.file.empty() ? strprintf("line %lld", (long long)e.line)
                        : strprintf("%s:%lld", e.file.c_str(), (long long)e.line);
}

}  // namespace

std::vector<ChoiceExample> read_choice_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  GOSSAMER_CHECK(in.good(), "%s: cannot open the multiple-choice file", path.c_str());
  std::vector<ChoiceExample> out;
  std::string text;
  for (int64_t line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line);
    json j;
    try {
      j = json::parse(text);
    } catch (const json::parse_error& e) {
      fail("%s: not a JSON object (%s)", where.c_str(), e.what());
    }
    GOSSAMER_CHECK(j.is_object(), "%s: expected a JSON object, found %s", where.c_str(),
                   j.type_name());
    ChoiceExample ex;
    ex.line = line;
    ex.file = path;
    ex.context = context_of(j, where);
    GOSSAMER_CHECK(j.contains("endings") && j["endings"].is_array(),
                   "%s: missing field \"endings\" (an array of strings)", where.c_str());
    for (const json& e : j["endings"]) {
      GOSSAMER_CHECK(e.is_string() && !e.get<std::string>().empty(),
                     "%s: every ending must be a non-empty string, found %s", where.c_str(),
                     e.dump().c_str());
      ex.endings.push_back(e.get<std::string>());
    }
    GOSSAMER_CHECK(ex.endings.size() >= 2, "%s: %zu ending(s); a choice needs at least two",
                   where.c_str(), ex.endings.size());
    ex.label = label_of(j, where);
    GOSSAMER_CHECK(ex.label >= 0 && size_t(ex.label) < ex.endings.size(),
                   "%s: \"label\" %d is not an index of the %zu endings", where.c_str(), ex.label,
                   ex.endings.size());
    out.push_back(std::move(ex));
  }
  GOSSAMER_CHECK(!in.bad(), "%s: read error", path.c_str());
  GOSSAMER_CHECK(!out.empty(), "%s: no examples", path.c_str());
  return out;
}

ChoiceScores score_choice(model::Model& model, const data::Tokenizer& tokenizer,
                          const ChoiceExample& example) {
  const int n = int(example.endings.size());
  const int max_T = model.max_seq();
  GOSSAMER_CHECK(n <= model.max_batch(), "%s: %d endings, more than the batch of %d",
                 where_of(example).c_str(), n, model.max_batch());
  std::vector<uint32_t> ctx = {tokenizer.document_token()};
  for (uint32_t t : tokenizer.encode(example.context)) ctx.push_back(t);
  std::vector<std::vector<uint32_t>> ends(n);
  int T = 0;
  for (int i = 0; i < n; ++i) {
    ends[i] = tokenizer.encode(" " + example.endings[i]);
    GOSSAMER_CHECK(!ends[i].empty() && int(ends[i].size()) < max_T,
                   "%s: ending %d has %zu tokens; the model's context holds %d",
                   where_of(example).c_str(), i, ends[i].size(), max_T);
    // Input = row without its last token; the row is (kept context) + ending.
    T = std::max(T, std::min<int>(max_T, int(ctx.size() + ends[i].size()) - 1));
  }
  std::vector<int32_t> tokens(size_t(n) * T, 0);
  std::vector<int> first_pred(n);  // position predicting the ending's first token
  for (int i = 0; i < n; ++i) {
    const size_t keep = std::min(ctx.size(), size_t(max_T + 1) - ends[i].size());
    std::vector<uint32_t> row(ctx.end() - ptrdiff_t(keep), ctx.end());
    row.insert(row.end(), ends[i].begin(), ends[i].end());
    for (size_t t = 0; t + 1 < row.size(); ++t) tokens[size_t(i) * T + t] = int32_t(row[t]);
    first_pred[i] = int(keep) - 1;
  }
  model.forward(tokens.data(), nullptr, n, T);
  const int V = model.config().vocab_size, Vp = model.config().padded_vocab_resolved();

  ChoiceScores s;
  s.sum_logprob.assign(n, 0.0);
  s.num_tokens.assign(n, 0);
  std::vector<float> logits(static_cast<size_t>(V));  // one position's logits, read back
  const float* row = logits.data();
  for (int i = 0; i < n; ++i) {
    for (size_t k = 0; k < ends[i].size(); ++k) {
      model.copy_logits_to((size_t(i) * T + size_t(first_pred[i]) + k) * Vp, logits);
      const double mx = *std::max_element(row, row + V);
      double z = 0;
      for (int v = 0; v < V; ++v) z += std::exp(double(row[v]) - mx);
      s.sum_logprob[i] += double(row[ends[i][k]]) - mx - std::log(z);
    }
    s.num_tokens[i] = int64_t(ends[i].size());
  }
  for (int i = 1; i < n; ++i) {
    if (s.sum_logprob[i] > s.sum_logprob[s.pred]) s.pred = i;
    if (s.sum_logprob[i] / double(s.num_tokens[i]) >
        s.sum_logprob[s.pred_norm] / double(s.num_tokens[s.pred_norm]))
      s.pred_norm = i;
  }
  return s;
}

ChoiceResult evaluate_choices(model::Model& model, const data::Tokenizer& tokenizer,
                              const std::vector<ChoiceExample>& examples, int64_t limit) {
  ChoiceResult r;
  const size_t n = limit > 0 ? std::min(examples.size(), size_t(limit)) : examples.size();
  for (size_t i = 0; i < n; ++i) {
    const ChoiceScores s = score_choice(model, tokenizer, examples[i]);
    ++r.examples;
    r.correct += s.pred == examples[i].label;
    r.correct_norm += s.pred_norm == examples[i].label;
  }
  return r;
}

}  // namespace gossamer::eval
