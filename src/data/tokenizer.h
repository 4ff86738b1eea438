// Tokenizer interface: what prep, training samples and `gossamer generate` need from a
// tokenizer, and load_tokenizer(), which builds one from a spec string:
//   "gpt2:DIR"        GPT-2 byte-level BPE (DIR holds encoder.json and vocab.bpe)
//   "spm:MODEL_FILE"  a SentencePiece model (spm_tokenizer.h)
//   "DIR"             the same as "gpt2:DIR" (existing configs and scripts)
// A spec whose text before the first ':' is a lower-case word ([a-z0-9_]+) names a kind; an
// unknown kind is an error (write "./xyz:dir" for a GPT-2 directory with such a name).
// Invariant: a Tokenizer is immutable after loading; every method is safe to call from several
// threads at once (prep encodes documents in parallel).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gossamer::data {

class Tokenizer {
 public:
  virtual ~Tokenizer();

  // The canonical spec it was loaded from ("gpt2:DIR", "spm:FILE"), for logs and messages.
  virtual std::string name() const = 0;
  // Token ids are 0 .. vocab_size() - 1.
  virtual uint32_t vocab_size() const = 0;
  virtual std::vector<uint32_t> encode(std::string_view text) const = 0;
  // The text of tokens; throws gossamer::Error naming the first id >= vocab_size().
  virtual std::string decode(std::span<const uint32_t> tokens) const = 0;
  // The bytes one token adds when it follows other tokens, for streaming output: print the
  // concatenation (a token may end inside a UTF-8 character). GPT-2: exactly decode() of the
  // token. spm: the piece with its "▁" as spaces, a byte piece as its raw byte, control pieces
  // as nothing; concatenating these differs from decode() only in the leading space of the
  // very first word (decode() drops it) and in invalid UTF-8 from byte pieces (decode() makes
  // it U+FFFD). Throws gossamer::Error for an id >= vocab_size().
  virtual std::string decode_token(uint32_t token) const = 0;
  // The token put before every document (prep: [doc, text..., doc, text...]) and used as the
  // prompt start for samples and `generate`; encode() never produces it from text.
  //   GPT-2: <|endoftext|> (50256), as llm.c.
  //   spm:   the model's BOS piece (<s>) when it has one, else its EOS piece (</s>); a model
  //          with neither is rejected at load. BOS, because a SentencePiece model's convention
  //          (and the one of models trained with it, e.g. Llama) is BOS at the start of a text.
  virtual uint32_t document_token() const = 0;

 protected:
  Tokenizer() = default;
  Tokenizer(const Tokenizer&) = default;
  Tokenizer& operator=(const Tokenizer&) = default;
};

// Loads the tokenizer named by spec (see the top of this file). Throws gossamer::Error naming
// the spec for an empty or unknown kind or an empty path, and naming the file that is missing
// or corrupt (GPT-2: sha256 check; spm: sentencepiece's status message included).
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec);

}  // namespace gossamer::data
