// prep_run: trains an spm model first when asked, loads the tokenizer, reads the inputs as
// documents (prep.h), encodes them in batches of about kBatchBytes with one document per
// OpenMP task, and appends [DOC, tokens...] per document in input order to a buffer that is cut
// into shards of exactly shard_tokens tokens. Batching bounds memory to one batch of text plus
// one shard of tokens, whatever the input size.
#include "data/prep.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <span>

#include "core/error.h"
#include "core/log.h"
#include "data/shard.h"
#include "data/text_check.h"
#include "data/text_lines.h"
#include "data/tokenizer.h"
#include "io/json_file.h"
#include "io/output_guard.h"

namespace gossamer::data {
namespace {

constexpr size_t kBatchBytes = size_t(32) << 20;

std::string shard_path(const std::string& prefix, size_t index) {
  return strprintf("%s_%06zu.bin", prefix.c_str(), index);
}

class ShardSink {
 public:
  ShardSink(const std::string& prefix, uint64_t shard_tokens, int version, PrepStats& stats)
      : prefix_(prefix), shard_tokens_(shard_tokens), version_(version), stats_(stats) {}

  void append(uint32_t token) {
    buffer_.push_back(token);
    if (buffer_.size() == shard_tokens_) flush();
  }
  void append(std::span<const uint32_t> tokens) {
    while (!tokens.empty()) {
      size_t take = std::min<size_t>(tokens.size(), shard_tokens_ - buffer_.size());
      buffer_.insert(buffer_.end(), tokens.begin(), tokens.begin() + take);
      tokens = tokens.subspan(take);
      if (buffer_.size() == shard_tokens_) flush();
    }
  }
  void flush() {
    if (buffer_.empty()) return;
    std::string path = shard_path(prefix_, stats_.shards.size());
    write_shard(path, buffer_, version_);
    log_info("prep: wrote %s (%zu tokens)", path.c_str(), buffer_.size());
    stats_.shards.push_back(path);
    buffer_.clear();
  }

 private:
  std::string prefix_;
  uint64_t shard_tokens_;
  int version_;
  PrepStats& stats_;
  std::vector<uint32_t> buffer_;
};

void encode_batch(const Tokenizer& tok, std::vector<std::string>& docs, ShardSink& sink,
                  PrepStats& stats) {
  std::vector<std::vector<uint32_t>> encoded(docs.size());
  const int64_t n = int64_t(docs.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) encoded[size_t(i)] = tok.encode(docs[size_t(i)]);
  for (size_t i = 0; i < docs.size(); ++i) {
    sink.append(tok.document_token());
    sink.append(encoded[i]);
    stats.tokens += 1 + encoded[i].size();
    stats.bytes += docs[i].size();
    ++stats.documents;
  }
  docs.clear();
}

// Logs invalid UTF-8 in the input `path` with counts; refuses a file that is mostly not text.
void check_is_text(const std::string& path, bool allow_binary) {
  io::check_regular_file(path, "prep input");  // a directory, a FIFO, a device: named
  const TextScan scan = scan_text_file(path);
  const double fraction = scan.non_text_fraction();
  GOSSAMER_CHECK(allow_binary || fraction <= kMaxNonTextFraction,
                 "prep: input %s does not look like text: %.1f%% of its %" PRIu64
                 " bytes are invalid UTF-8 (%" PRIu64 " sequences) or control characters (%" PRIu64
                 "); give --allow-binary to tokenise it anyway",
                 path.c_str(), 100 * fraction, scan.bytes, scan.invalid_sequences,
                 scan.control_bytes);
  if (scan.invalid_sequences > 0)
    log_warn("prep: input %s: %" PRIu64 " invalid UTF-8 sequence(s), the first at byte %" PRIu64
             "; each is tokenised as U+FFFD",
             path.c_str(), scan.invalid_sequences, scan.first_invalid_offset);
  if (scan.control_bytes > 0)
    log_warn("prep: input %s: %" PRIu64 " control character(s) (NUL and others)", path.c_str(),
             scan.control_bytes);
}

// Checks the options and the inputs, creates the output directory and returns the tokenizer:
// the one named, loaded before anything is written, or the spm model trained on the inputs.
std::unique_ptr<Tokenizer> make_tokenizer(const PrepOptions& opt) {
  GOSSAMER_CHECK(!opt.inputs.empty(), "prep: no input files");
  GOSSAMER_CHECK(!opt.output_prefix.empty(), "prep: empty output prefix");
  GOSSAMER_CHECK(opt.shard_tokens > 0, "prep: shard_tokens must be positive");
  const bool train = !opt.train_spm.model_prefix.empty();
  GOSSAMER_CHECK(opt.tokenizer.empty() || opt.tokenizer_dir.empty(),
                 "prep: give the tokenizer once (tokenizer \"%s\", tokenizer_dir \"%s\")",
                 opt.tokenizer.c_str(), opt.tokenizer_dir.c_str());
  const std::string spec = opt.tokenizer.empty() ? opt.tokenizer_dir : opt.tokenizer;
  GOSSAMER_CHECK(!(train && !spec.empty()),
                 "prep: --train-spm %s and --tokenizer %s exclude each other (the trained model "
                 "is the tokenizer)",
                 opt.train_spm.model_prefix.c_str(), spec.c_str());
  GOSSAMER_CHECK(train || !spec.empty(), "prep: no tokenizer (give --tokenizer or --train-spm)");
  for (const auto& path : opt.inputs) check_is_text(path, opt.allow_binary);
  std::unique_ptr<Tokenizer> tok;
  if (!train) tok = load_tokenizer(spec);  // fails before anything is written
  const std::filesystem::path parent = std::filesystem::path(opt.output_prefix).parent_path();
  io::refuse_training_paths(parent.empty() ? "." : parent.string(), "prep: --output");
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    GOSSAMER_CHECK(!ec, "prep: cannot create output directory %s: %s", parent.c_str(),
                   ec.message().c_str());
  }
  if (train) {
    SpmTrainOptions train_opt = opt.train_spm;
    train_opt.inputs = opt.inputs;
    tok = load_tokenizer("spm:" + spm_train(train_opt).model_path);
  }
  return tok;
}

// Passes each document of the input file `path` to add_doc, in order: the whole file, or each
// run of non-blank lines (joined by "\n").
void read_documents(const std::string& path, DocSplit split,
                    const std::function<void(std::string&&)>& add_doc) {
  std::ifstream in(path, std::ios::binary);
  GOSSAMER_CHECK(in.good(), "prep: input %s: cannot open for reading", path.c_str());
  if (split == DOC_SPLIT_FILE) {
    std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    GOSSAMER_CHECK(!in.bad(), "prep: input %s: read error", path.c_str());
    if (!doc.empty()) add_doc(std::move(doc));
    return;
  }
  std::string line, doc;
  bool in_doc = false;
  while (std::getline(in, line)) {
    if (is_blank_line(line)) {
      if (in_doc) add_doc(std::move(doc));
      doc.clear();
      in_doc = false;
      continue;
    }
    if (in_doc) doc += '\n';
    doc += line;
    in_doc = true;
  }
  GOSSAMER_CHECK(!in.bad(), "prep: input %s: read error", path.c_str());
  if (in_doc) add_doc(std::move(doc));
}

void log_summary(const PrepOptions& opt, const PrepStats& stats, double encode_s) {
  log_info("prep: %" PRIu64 " documents, %" PRIu64 " bytes -> %" PRIu64
           " tokens (%.3f bytes/token) in %zu shard(s), %.2f s, %.0f tokens/s",
           stats.documents, stats.bytes, stats.tokens, double(stats.bytes) / double(stats.tokens),
           stats.shards.size(), encode_s, double(stats.tokens) / std::max(encode_s, 1e-9));
  if (std::filesystem::exists(shard_path(opt.output_prefix, stats.shards.size())))
    log_warn("prep: %s is left over from an earlier run; delete it before training on %s_*.bin",
             shard_path(opt.output_prefix, stats.shards.size()).c_str(), opt.output_prefix.c_str());
}

}  // namespace

DocSplit parse_doc_split(const std::string& name) {
  if (name == "blank-line") return DOC_SPLIT_BLANK_LINE;
  if (name == "file") return DOC_SPLIT_FILE;
  fail("document split \"%s\": expected \"blank-line\" or \"file\"", name.c_str());
}

PrepStats prep_run(const PrepOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::unique_ptr<Tokenizer> tok = make_tokenizer(opt);
  const auto t_encode = std::chrono::steady_clock::now();
  const int version = tok->vocab_size() <= 65536 ? kShardVersionU16 : kShardVersionU32;
  log_info("prep: tokenizer %s, %u tokens, document token %u, shard version %d",
           tok->name().c_str(), tok->vocab_size(), tok->document_token(), version);
  log_info("prep: %zu input file(s) -> %s_NNNNNN.bin, %" PRIu64
           " tokens per shard, documents split by %s, %d thread(s)",
           opt.inputs.size(), opt.output_prefix.c_str(), opt.shard_tokens,
           opt.doc_split == DOC_SPLIT_FILE ? "file" : "blank lines", omp_get_max_threads());

  PrepStats stats;
  stats.tokenizer = tok->name();
  stats.shard_version = version;
  ShardSink sink(opt.output_prefix, opt.shard_tokens, version, stats);
  std::vector<std::string> docs;
  size_t batch_bytes = 0;
  auto add_doc = [&](std::string&& doc) {
    batch_bytes += doc.size();
    docs.push_back(std::move(doc));
    if (batch_bytes >= kBatchBytes) {
      encode_batch(*tok, docs, sink, stats);
      batch_bytes = 0;
    }
  };
  for (const auto& path : opt.inputs) {
    const uint64_t docs_before = stats.documents + docs.size();
    read_documents(path, opt.doc_split, add_doc);
    log_info("prep: %s: %" PRIu64 " document(s)", path.c_str(),
             stats.documents + docs.size() - docs_before);
  }
  encode_batch(*tok, docs, sink, stats);
  GOSSAMER_CHECK(stats.documents > 0, "prep: the inputs contain no documents (first input %s)",
                 opt.inputs.front().c_str());
  sink.flush();
  const auto t1 = std::chrono::steady_clock::now();
  stats.seconds = std::chrono::duration<double>(t1 - t0).count();
  log_summary(opt, stats, std::chrono::duration<double>(t1 - t_encode).count());
  return stats;
}

}  // namespace gossamer::data
