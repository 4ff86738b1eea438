// Evaluation: the HellaSwag-format reader (every field form, every bad line named by its line
// number), the multiple-choice scorer against log-likelihoods computed independently from the
// model's own cross-entropy, context truncation, and evaluate() covering every window once
// with a partial last batch weighted by its size.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/loader.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "eval/evaluate.h"
#include "eval/multiple_choice.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "test_util.h"

using namespace gossamer;
using gossamer::testing::expect_error;
using gossamer::testing::TempDir;

namespace {

// One token per byte; id 256 is the document token.
class ByteTokenizer final : public data::Tokenizer {
 public:
  std::string name() const override { return "bytes"; }
  uint32_t vocab_size() const override { return 257; }
  std::vector<uint32_t> encode(std::string_view text) const override {
    return std::vector<uint32_t>(text.begin(), text.end());
  }
  std::string decode(std::span<const uint32_t> t) const override {
    return std::string(t.begin(), t.end());
  }
  std::string decode_token(uint32_t t) const override { return std::string(1, char(t)); }
  uint32_t document_token() const override { return 256; }
};

model::ModelConfig tiny_config(int max_seq) {
  model::ModelConfig c;
  c.family = model::ModelFamily::MODEL_FAMILY_GPT2;
  c.n_layer = 2;
  c.n_head = 2;
  c.d_model = 32;
  c.vocab_size = 257;
  c.padded_vocab = 264;
  c.max_seq_len = max_seq;
  return c;
}

std::string write_file(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

// Summed log-likelihood of tokens[from..] given the tokens before them, from the model's
// mean cross-entropy over whole rows: NLL(row) - NLL(prefix).
double loglik_by_crossentropy(model::Model& m, const std::vector<int32_t>& row, size_t from) {
  auto total_nll = [&](size_t n) {
    std::vector<int32_t> in(row.begin(), row.begin() + ptrdiff_t(n - 1));
    std::vector<int32_t> tg(row.begin() + 1, row.begin() + ptrdiff_t(n));
    return double(m.forward(in.data(), tg.data(), 1, int(n - 1))) * double(n - 1);
  };
  return -(total_nll(row.size()) - (from >= 2 ? total_nll(from) : 0.0));
}

}  // namespace

TEST(ChoiceReader, AcceptsHellaSwagFieldForms) {
  TempDir dir;
  const std::string path = write_file(
      dir, "ok.jsonl",
      "{\"ctx\": \"A man\", \"endings\": [\"runs\", \"sits\", \"eats\", \"flies\"], \"label\": 2}\n"
      "\n"
      "{\"ctx_a\": \"She\", \"ctx_b\": \"then\", \"endings\": [\"x\", \"y\"], \"label\": \"1\"}\n"
      "{\"context\": \"It\", \"endings\": [\"a\", \"b\", \"c\"], \"label\": 0}\n");
  const auto ex = eval::read_choice_jsonl(path);
  ASSERT_EQ(ex.size(), 3u);
  EXPECT_EQ(ex[0].context, "A man");
  EXPECT_EQ(ex[0].endings.size(), 4u);
  EXPECT_EQ(ex[0].label, 2);
  EXPECT_EQ(ex[1].context, "She then");
  EXPECT_EQ(ex[1].label, 1);
  EXPECT_EQ(ex[1].line, 3);
  EXPECT_EQ(ex[2].context, "It");
}

TEST(ChoiceReader, NamesTheBadLine) {
  TempDir dir;
  const std::string good = "{\"ctx\": \"c\", \"endings\": [\"a\", \"b\"], \"label\": 1}\n";
  struct Case {
    std::string line, expected;
  };
  const std::vector<Case> cases = {
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\"], \"label\": 1", "not a JSON object"},
      {"[1, 2]", "expected a JSON object"},
      {"{\"endings\": [\"a\", \"b\"], \"label\": 0}", "no context"},
      {"{\"ctx\": \"c\", \"label\": 0}", "\"endings\""},
      {"{\"ctx\": \"c\", \"endings\": [\"a\"], \"label\": 0}", "at least two"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"\"], \"label\": 0}", "non-empty string"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", 7], \"label\": 0}", "non-empty string"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\"]}", "missing field \"label\""},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\"], \"label\": 2}", "not an index"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\"], \"label\": \"x\"}", "must be an integer"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\"], \"label\": 0.5}", "must be an integer"},
  };
  for (const Case& c : cases) {
    const std::string path = write_file(dir, "bad.jsonl", good + good + c.line + "\n" + good);
    expect_error([&] { eval::read_choice_jsonl(path); }, {path + ":3:", c.expected});
  }
  const std::string empty = write_file(dir, "empty.jsonl", "\n\n");
  expect_error([&] { eval::read_choice_jsonl(empty); }, {"no examples"});
  expect_error([&] { eval::read_choice_jsonl(dir.file("missing.jsonl")); }, {"cannot open"});
}

TEST(ChoiceScorer, LogLikelihoodsEqualTheModelsCrossEntropy) {
  const int max_seq = 64;
  auto m = model::make_model(tiny_config(max_seq), 4, max_seq, kernels::cpu_ops());
  m->init_weights(7);
  ByteTokenizer tok;
  eval::ChoiceExample ex{"The cat", {"sat down", "ran", "is a very long ending here"}, 0, 1, ""};
  const eval::ChoiceScores s = eval::score_choice(*m, tok, ex);
  ASSERT_EQ(s.sum_logprob.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> row = {256};
    for (char c : ex.context) row.push_back(uint8_t(c));
    const size_t from = row.size();
    for (char c : " " + ex.endings[i]) row.push_back(uint8_t(c));
    const double expected = loglik_by_crossentropy(*m, row, from);
    EXPECT_EQ(s.num_tokens[i], int64_t(row.size() - from));
    EXPECT_NEAR(s.sum_logprob[i], expected, 1e-4 * std::abs(expected)) << "ending " << i;
  }
  int pred = 0, pred_norm = 0;
  for (int i = 1; i < 3; ++i) {
    if (s.sum_logprob[i] > s.sum_logprob[pred]) pred = i;
    if (s.sum_logprob[i] / s.num_tokens[i] > s.sum_logprob[pred_norm] / s.num_tokens[pred_norm])
      pred_norm = i;
  }
  EXPECT_EQ(s.pred, pred);
  EXPECT_EQ(s.pred_norm, pred_norm);
  // The long ending has the smallest summed likelihood (more tokens), so acc picks another.
  EXPECT_NE(s.pred, 2);
}

TEST(ChoiceScorer, LongContextsLoseTheirStart) {
  const int max_seq = 16;
  auto m = model::make_model(tiny_config(max_seq), 2, max_seq, kernels::cpu_ops());
  m->init_weights(3);
  ByteTokenizer tok;
  const std::string ctx = "abcdefghijklmnopqrstuvwxyz0123456789";
  const eval::ChoiceScores s = eval::score_choice(*m, tok, {ctx, {"uv", "wxyz"}, 0, 1, ""});
  // Row = last (max_seq + 1 - ending) context tokens + ending.
  for (int i = 0; i < 2; ++i) {
    const std::string end = i == 0 ? " uv" : " wxyz";
    std::vector<int32_t> row;
    for (char c : ctx.substr(ctx.size() - (max_seq + 1 - end.size()))) row.push_back(uint8_t(c));
    const size_t from = row.size();
    for (char c : end) row.push_back(uint8_t(c));
    ASSERT_EQ(row.size(), size_t(max_seq + 1));
    const double expected = loglik_by_crossentropy(*m, row, from);
    EXPECT_NEAR(s.sum_logprob[i], expected, 1e-4 * std::abs(expected));
  }
  expect_error(
      [&] {
        eval::score_choice(*m, tok, {"c", {"a", std::string(20, 'x')}, 0, 9, ""});
      },
      {"line 9", "ending 1"});
  expect_error(
      [&] {
        eval::score_choice(*m, tok, {"c", {"a", std::string(20, 'x')}, 0, 9, "hs.jsonl"});
      },
      {"hs.jsonl:9: ending 1 has 21 tokens; the model's context holds"});
}

TEST(ChoiceScorer, AccuracyCountsCorrectPredictions) {
  const int max_seq = 32;
  auto m = model::make_model(tiny_config(max_seq), 4, max_seq, kernels::cpu_ops());
  m->init_weights(11);
  ByteTokenizer tok;
  std::vector<eval::ChoiceExample> ex;
  for (int i = 0; i < 6; ++i)
    ex.push_back({"ctx " + std::to_string(i), {"aa", "bbb", "c"}, i % 3, i + 1, ""});
  int64_t correct = 0, correct_norm = 0;
  for (const auto& e : ex) {
    const auto s = eval::score_choice(*m, tok, e);
    correct += s.pred == e.label;
    correct_norm += s.pred_norm == e.label;
  }
  const eval::ChoiceResult r = eval::evaluate_choices(*m, tok, ex);
  EXPECT_EQ(r.examples, 6);
  EXPECT_EQ(r.correct, correct);
  EXPECT_EQ(r.correct_norm, correct_norm);
  EXPECT_EQ(eval::evaluate_choices(*m, tok, ex, 2).examples, 2);
}

TEST(Evaluate, EveryWindowOnceWithAPartialLastBatch) {
  TempDir dir;
  const int T = 8;
  Rng rng(5);
  // Windows start every T tokens and hold T+1: 7 in shard a (57 tokens), 3 in b (30 tokens).
  for (auto [name, n] : {std::pair<const char*, int>{"a.bin", 57}, {"b.bin", 30}}) {
    std::vector<uint32_t> tokens(n);
    for (auto& t : tokens) t = uint32_t(rng.below(257));
    data::write_shard(dir.file(name), tokens, 1);
  }
  const std::vector<std::string> shards = {dir.file("a.bin"), dir.file("b.bin")};
  auto m = model::make_model(tiny_config(T), 4, T, kernels::cpu_ops());
  m->init_weights(1);
  std::vector<int32_t> in(4 * T), tg(4 * T);
  double ref_sum = 0;
  data::DataLoader one(shards, T, 0, false, 257);
  ASSERT_EQ(one.num_windows(), 10u);
  for (int w = 0; w < 10; ++w) {
    one.next_batch(0, 1, 1, in.data(), tg.data());
    ref_sum += m->forward(in.data(), tg.data(), 1, T);
  }
  for (int B : {1, 3, 4}) {
    data::DataLoader loader(shards, T, 0, false, 257);
    const eval::EvalResult r = eval::evaluate(*m, loader, B, 0, in.data(), tg.data());
    EXPECT_EQ(r.windows, 10) << "B " << B;
    EXPECT_EQ(r.tokens, 10 * T);
    EXPECT_NEAR(r.loss, ref_sum / 10, 1e-5) << "B " << B;
  }
  data::DataLoader loader(shards, T, 0, false, 257);
  EXPECT_EQ(eval::evaluate(*m, loader, 3, 2, in.data(), tg.data()).windows, 6);
}
