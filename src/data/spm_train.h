// Trains a SentencePiece model (BPE or unigram) on text files through libsentencepiece's
// SentencePieceTrainer and writes PREFIX.model and PREFIX.vocab (the formats spm_train writes).
// Every non-blank line of the inputs is one training sentence (blank lines only separate
// documents; lines of any length are used, not only spm_train's default 4192 bytes).
// Invariants: the output depends only on the inputs and options (one training thread and a
// fixed seed: sentencepiece's unigram trainer sums in a thread-count dependent order, so its
// result changes with num_threads; BPE does not); nothing is half-written: both files are
// first written completely under temporary names in the same directory, then renamed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gossamer::data {

enum SpmModelType {
  SPM_MODEL_TYPE_BPE,
  SPM_MODEL_TYPE_UNIGRAM,
};

// Parses "bpe" or "unigram"; throws naming the value otherwise.
SpmModelType parse_spm_model_type(const std::string& name);
const char* spm_model_type_name(SpmModelType type);

struct SpmTrainOptions {
  std::vector<std::string> inputs;  // UTF-8 text files, in order
  std::string model_prefix;         // writes <model_prefix>.model and <model_prefix>.vocab
  SpmModelType model_type = SPM_MODEL_TYPE_BPE;
  uint32_t vocab_size = 8000;          // pieces, including <unk>, <s>, </s> and the 256 byte pieces
  bool byte_fallback = false;          // characters outside the vocabulary become UTF-8 byte pieces
  double character_coverage = 0.9995;  // share of characters the alphabet covers (0, 1]
  uint64_t max_sentences = 0;          // train on a seeded sample of this many lines (0: all lines)
  // false (default): sentencepiece's nmt_nfkc normalisation with extra white space removed, as
  // spm_train: NFKC, newlines/tabs/space runs become one space, so a document encodes as its
  // lines' spm_encode ids concatenated. true: no normalisation, white space kept (Llama
  // style): with byte_fallback, decode(encode(x)) == x for every valid UTF-8 x, but a line
  // after a newline no longer starts with the "▁" word boundary, so spm_encode (one line at a
  // time) no longer reproduces a multi-line document's ids.
  bool identity_normalization = false;
};

struct SpmTrainStats {
  std::string model_path, vocab_path;
  uint64_t sentences = 0;  // non-blank input lines read
  uint64_t bytes = 0;      // their bytes
  double seconds = 0;
};

// Throws gossamer::Error naming the input that cannot be read, the output that cannot be
// written, or quoting sentencepiece's status (e.g. a vocabulary too large for the text).
SpmTrainStats spm_train(const SpmTrainOptions& options);

}  // namespace gossamer::data
