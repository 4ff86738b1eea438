// `gossamer prep`: tokenises text files with the GPT-2 tokenizer into llm.c-layout shards
// (version 1, uint16 tokens). Documents: in DOC_SPLIT_BLANK_LINE mode a document is a maximal
// run of non-blank lines of one file (a blank line is empty or only spaces, tabs and carriage
// returns), its lines joined with "\n" (no trailing newline); in DOC_SPLIT_FILE mode each
// file, byte for byte, is one document (empty files are skipped). Like llm.c, the token stream
// is EOT (50256) before every document: [EOT, doc1..., EOT, doc2..., ...], documents in input
// order. Shards output_prefix_000000.bin, _000001.bin, ... hold shard_tokens tokens each, the
// last one the rest; a document may continue into the next shard.
// Invariant: the shards depend only on the inputs and options, never on the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gossamer::data {

enum DocSplit {
  DOC_SPLIT_BLANK_LINE,  // documents separated by blank lines (the corpus scripts' layout)
  DOC_SPLIT_FILE,        // every input file is one document
};

struct PrepOptions {
  std::string tokenizer_dir;        // holds encoder.json and vocab.bpe (GPT-2)
  std::vector<std::string> inputs;  // text files (UTF-8), in order
  std::string output_prefix;        // shards are <output_prefix>_000000.bin, ...
  uint64_t shard_tokens = 100000000;
  DocSplit doc_split = DOC_SPLIT_BLANK_LINE;
};

struct PrepStats {
  uint64_t documents = 0;
  uint64_t tokens = 0;  // including one EOT per document
  uint64_t bytes = 0;   // text bytes of the documents
  double seconds = 0;
  std::vector<std::string> shards;
};

// Parses "blank-line" or "file"; throws naming the value otherwise.
DocSplit parse_doc_split(const std::string& name);

// Throws gossamer::Error naming the input or output that fails, or when there are no documents.
PrepStats prep_run(const PrepOptions& options);

}  // namespace gossamer::data
