// spm_train(): feeds the inputs' non-blank lines to SentencePieceTrainer through a
// SentenceIterator (no comma-separated file list, our own read errors), asks the trainer for
// the serialized model instead of letting it write files (so the model holds no output path
// and nothing is written on failure), then writes PREFIX.vocab and PREFIX.model atomically.
// Settings that are not options are fixed: num_threads 1, random seed kSeed, <unk> 0, <s> 1,
// </s> 2, no pad, and everything else at spm_train's defaults. Training sets two of
// libsentencepiece's process-wide settings, always to the same constants: its random seed and
// its minimum log level (1: warnings and errors only).
#include "data/spm_train.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "core/log.h"
#include "data/text_lines.h"
#include "io/atomic_file.h"

namespace gossamer::data {

namespace {

constexpr unsigned kSeed = 20240520;
// Longer lines would be skipped by the trainer; 1 GiB means "never" in practice.
constexpr int kMaxSentenceBytes = 1 << 30;

class LineIterator final : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::vector<std::string>& paths) : paths_(paths) { Next(); }

  bool done() const override { return done_; }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }
  void Next() override {
    while (!done_) {
      if (!in_.is_open()) {
        if (file_ == paths_.size()) {
          done_ = true;
          return;
        }
        in_.open(paths_[file_], std::ios::binary);
        if (!in_.good()) return set_error("cannot open for reading");
      }
      if (std::getline(in_, line_)) {
        if (is_blank_line(line_)) continue;
        ++sentences_;
        bytes_ += line_.size();
        return;
      }
      if (in_.bad()) return set_error("read error");
      in_.close();
      ++file_;
    }
  }
  uint64_t sentences() const { return sentences_; }
  uint64_t bytes() const { return bytes_; }
  // The gossamer message of a read failure ("" when none).
  const std::string& error() const { return error_; }

 private:
  void set_error(const char* what) {
    error_ = strprintf("spm training: input %s: %s", paths_[file_].c_str(), what);
    status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal, error_);
    done_ = true;
  }

  const std::vector<std::string>& paths_;
  size_t file_ = 0;
  std::ifstream in_;
  std::string line_, error_;
  bool done_ = false;
  uint64_t sentences_ = 0, bytes_ = 0;
  sentencepiece::util::Status status_;
};

// The .vocab text spm_train writes: "piece<TAB>score" per id.
std::string vocab_text(const std::string& serialized_model) {
  sentencepiece::SentencePieceProcessor sp;
  const auto status = sp.LoadFromSerializedProto(serialized_model);
  if (!status.ok())
    fail("spm training: the trained model does not load: %s", status.ToString().c_str());
  std::ostringstream out;
  for (int id = 0; id < sp.GetPieceSize(); ++id)
    out << sp.IdToPiece(id) << '\t' << sp.GetScore(id) << '\n';
  return out.str();
}

}  // namespace

SpmModelType parse_spm_model_type(const std::string& name) {
  if (name == "bpe") return SPM_MODEL_TYPE_BPE;
  if (name == "unigram") return SPM_MODEL_TYPE_UNIGRAM;
  fail("spm model type \"%s\": expected \"bpe\" or \"unigram\"", name.c_str());
}

const char* spm_model_type_name(SpmModelType type) {
  return type == SPM_MODEL_TYPE_UNIGRAM ? "unigram" : "bpe";
}

SpmTrainStats spm_train(const SpmTrainOptions& opt) {
  GOSSAMER_CHECK(!opt.inputs.empty(), "spm training: no input files");
  GOSSAMER_CHECK(!opt.model_prefix.empty(), "spm training: empty model prefix");
  GOSSAMER_CHECK(opt.vocab_size >= 1 && opt.vocab_size <= uint32_t(INT_MAX),
                 "spm training: vocabulary size %u out of range", opt.vocab_size);
  GOSSAMER_CHECK(opt.character_coverage > 0 && opt.character_coverage <= 1,
                 "spm training: character coverage %g: expected a value in (0, 1]",
                 opt.character_coverage);
  for (const auto& path : opt.inputs) {
    std::ifstream probe(path, std::ios::binary);
    GOSSAMER_CHECK(probe.good(), "spm training: input %s: cannot open for reading", path.c_str());
  }
  SpmTrainStats stats;
  stats.model_path = opt.model_prefix + ".model";
  stats.vocab_path = opt.model_prefix + ".vocab";
  const std::filesystem::path parent = std::filesystem::path(opt.model_prefix).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    GOSSAMER_CHECK(!ec, "spm training: cannot create directory %s for %s: %s", parent.c_str(),
                   stats.model_path.c_str(), ec.message().c_str());
  }

  const auto t0 = std::chrono::steady_clock::now();
  log_info(
      "spm training: %s, %u pieces, byte fallback %s, character coverage %g, %s "
      "normalization, %zu input file(s) -> %s",
      spm_model_type_name(opt.model_type), opt.vocab_size, opt.byte_fallback ? "on" : "off",
      opt.character_coverage, opt.identity_normalization ? "identity" : "nmt_nfkc",
      opt.inputs.size(), stats.model_path.c_str());
  std::unordered_map<std::string, std::string> args = {
      {"model_type", spm_model_type_name(opt.model_type)},
      {"vocab_size", std::to_string(opt.vocab_size)},
      {"byte_fallback", opt.byte_fallback ? "true" : "false"},
      {"character_coverage", strprintf("%.17g", opt.character_coverage)},
      {"input_sentence_size", std::to_string(opt.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"max_sentence_length", std::to_string(kMaxSentenceBytes)},
      {"num_threads", "1"},
      {"minloglevel", "1"},  // sentencepiece's INFO lines off; warnings and errors stay
  };
  if (opt.identity_normalization) {
    args["normalization_rule_name"] = "identity";
    args["remove_extra_whitespaces"] = "false";
  }
  sentencepiece::SetRandomGeneratorSeed(kSeed);
  LineIterator lines(opt.inputs);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
  if (!lines.error().empty()) fail("%s", lines.error().c_str());
  GOSSAMER_CHECK(lines.sentences() > 0, "spm training: the inputs hold no text (first input %s)",
                 opt.inputs.front().c_str());
  if (!status.ok()) {
    // sentencepiece's messages name its own flags (--character_coverage), which prep does not
    // have: the one failure a user can cause by an option is said in prep's terms.
    const std::string why = status.ToString();
    const size_t at = why.find("Vocabulary size is smaller than required_chars. ");
    if (at != std::string::npos) {
      unsigned asked = 0, needed = 0;
      if (std::sscanf(why.c_str() + at + 48, "%u vs %u", &asked, &needed) == 2)
        fail(
            "prep: --spm-vocab-size %u is smaller than the %u characters and special pieces "
            "the corpus needs; give --spm-vocab-size %u or more",
            asked, needed, needed);
    }
    fail("spm training for %s failed: %s", stats.model_path.c_str(), why.c_str());
  }
  GOSSAMER_CHECK(!model.empty(), "spm training for %s produced no model", stats.model_path.c_str());
  stats.sentences = lines.sentences();
  stats.bytes = lines.bytes();

  // Both files are complete on disk before either replaces an older one.
  io::AtomicFile vocab_file(stats.vocab_path), model_file(stats.model_path);
  vocab_file.write(vocab_text(model));
  model_file.write(model);
  vocab_file.commit();
  model_file.commit();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log_info("spm training: %" PRIu64 " lines, %" PRIu64 " bytes -> %s, %s in %.2f s",
           stats.sentences, stats.bytes, stats.model_path.c_str(), stats.vocab_path.c_str(),
           stats.seconds);
  return stats;
}

}  // namespace gossamer::data
