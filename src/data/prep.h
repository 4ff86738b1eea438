// `gossamer prep`: tokenises text files into llm.c-layout shards with any tokenizer
// (tokenizer.h: "gpt2:DIR", "spm:MODEL_FILE" or a GPT-2 directory), optionally training a
// SentencePiece model on the same inputs first (spm_train.h). Documents: in
// DOC_SPLIT_BLANK_LINE mode a document is a maximal run of non-blank lines of one file (a blank
// line is empty or only spaces, tabs and carriage returns), its lines joined with "\n" (no
// trailing newline); in DOC_SPLIT_FILE mode each file, byte for byte, is one document (empty
// files are skipped). Like llm.c, the token stream has the tokenizer's document token before
// every document (GPT-2: EOT 50256; spm: BOS): [DOC, doc1..., DOC, doc2..., ...], documents in
// input order, each encoded as one string. Shards output_prefix_000000.bin, _000001.bin, ...
// hold shard_tokens tokens each, the last one the rest; a document may continue into the next
// shard. Shards are version 1 (uint16) when the vocabulary has at most 65,536 tokens, else
// version 2 (uint32), all shards of one run alike.
// Invariant: the shards depend only on the inputs and options, never on the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/spm_train.h"

namespace gossamer::data {

enum DocSplit {
  DOC_SPLIT_BLANK_LINE,  // documents separated by blank lines (the corpus scripts' layout)
  DOC_SPLIT_FILE,        // every input file is one document
};

struct PrepOptions {
  std::string tokenizer;      // spec: "gpt2:DIR", "spm:MODEL_FILE" or a GPT-2 directory
  std::string tokenizer_dir;  // deprecated: used as the spec when `tokenizer` is empty
  // When train_spm.model_prefix is set, a SentencePiece model is first trained on `inputs`
  // (train_spm.inputs is ignored) and the shards use it; `tokenizer` must then be empty.
  SpmTrainOptions train_spm;
  std::vector<std::string> inputs;  // text files (UTF-8), in order
  std::string output_prefix;        // shards are <output_prefix>_000000.bin, ...
  uint64_t shard_tokens = 100000000;
  DocSplit doc_split = DOC_SPLIT_BLANK_LINE;
  // Inputs are scanned before anything is written (text_check.h): invalid UTF-8 is logged with
  // counts; a file whose non-text fraction exceeds kMaxNonTextFraction is refused unless this
  // is set.
  bool allow_binary = false;
};

struct PrepStats {
  uint64_t documents = 0;
  uint64_t tokens = 0;    // including one document token per document
  uint64_t bytes = 0;     // text bytes of the documents
  double seconds = 0;     // including spm training
  std::string tokenizer;  // the tokenizer's name() ("spm:PREFIX.model" after training)
  int shard_version = 0;  // kShardVersionU16 or kShardVersionU32
  std::vector<std::string> shards;
};

// Parses "blank-line" or "file"; throws naming the value otherwise.
DocSplit parse_doc_split(const std::string& name);

// Throws gossamer::Error naming the input or output that fails (an input that is mostly not
// text included), the tokenizer that does not load, or when there are no documents.
PrepStats prep_run(const PrepOptions& options);

}  // namespace gossamer::data
