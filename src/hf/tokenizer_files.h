// Tokenizer files between our tokenizer specs (data/tokenizer.h) and a Hugging Face directory.
//   GPT-2 BPE ("gpt2:DIR"): vocab.json = DIR/encoder.json and merges.txt = DIR/vocab.bpe,
//     byte for byte (they are the files HF ships for gpt2; vocab.bpe already starts with
//     "#version: 0.2"), tokenizer_config.json for GPT2Tokenizer.
//   SentencePiece ("spm:FILE"): tokenizer.model = FILE, tokenizer_config.json for
//     LlamaTokenizer (legacy mode, i.e. plain SentencePiece encoding, plus BOS).
// Every source is loaded (and so validated: GPT-2's sha256, sentencepiece's parser) before
// anything is written. Import accepts only files our tokenizers can load: GPT-2's own BPE
// files (checked by sha256) or a SentencePiece model.
#pragma once

#include <memory>
#include <string>

#include "data/tokenizer.h"
#include "hf/hf_config.h"
#include "io/staging_dir.h"

namespace gossamer::hf {

// A validated tokenizer source for export.
struct HfTokenizerFiles {
  std::unique_ptr<data::Tokenizer> tokenizer;
  std::string kind;  // "gpt2" | "spm"
  std::string path;  // GPT-2 directory or .model file
};

// Loads spec and checks that its ids fit the model (vocab_size <= model_vocab_size).
HfTokenizerFiles open_tokenizer_for_export(const std::string& spec, int model_vocab_size);
// Writes the HF tokenizer files into the staging directory; returns bos/eos for config.json.
HfSpecialTokens write_hf_tokenizer(const HfTokenizerFiles& files, int model_max_length,
                                   const io::StagingDir& out);

// The tokenizer of an HF directory, or nullptr when it has none: throws naming the file when
// tokenizer_config.json names a tokenizer whose files are missing, when only one of
// vocab.json / merges.txt exists, or when a file is not one our tokenizers load.
struct HfTokenizerSource {
  std::string kind;                    // "gpt2" | "spm" | "" (none)
  std::string vocab_json, merges_txt;  // gpt2
  std::string model_file;              // spm
};
HfTokenizerSource find_hf_tokenizer(const std::string& hf_dir);
// Copies the source into out/SUBDIR in our layout and returns the spec that will load it once
// `out` is committed ("gpt2:FINAL/SUBDIR" or "spm:FINAL/SUBDIR/tokenizer.model", absolute).
std::string import_hf_tokenizer(const HfTokenizerSource& src, const io::StagingDir& out,
                                const std::string& subdir);
// Loads the tokenizer of an HF directory directly (for `generate` on an HF directory); throws
// when it has none.
std::unique_ptr<data::Tokenizer> load_hf_tokenizer(const std::string& hf_dir);

}  // namespace gossamer::hf
