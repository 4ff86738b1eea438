// GPT-2 byte-level BPE tokenizer, token-for-token identical to the npm package gpt-3-encoder's
// encode() under Node (the reference; tests/e2e/test_tokenizer_parity.sh checks the whole
// default corpus): GPT-2's pre-tokenisation pattern implemented by hand over code points
// classified with Node's own \p{L}/\p{N}/\s tables, then the package's merge loop, including
// its quirks (merge ranks looked up by the pair's text joined with ",", ties between equal
// ranks broken towards the last pair). Input bytes that are not valid UTF-8 are first replaced
// by U+FFFD per maximal invalid subpart, as Node's Buffer-to-string conversion does, so
// decode(encode(x)) == x holds exactly for valid UTF-8 x. The tokenizer is immutable after
// load(); encode() and decode() are safe to call from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gossamer::data {

class Gpt2Tokenizer {
 public:
  static constexpr const char* kEncoderFile = "encoder.json";
  static constexpr const char* kVocabFile = "vocab.bpe";
  static constexpr const char* kEncoderSha256 =
      "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783";
  static constexpr const char* kVocabSha256 =
      "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5";
  static constexpr uint32_t kEotToken = 50256;  // <|endoftext|>
  static constexpr uint32_t kVocabSize = 50257;

  // Reads dir/encoder.json and dir/vocab.bpe after checking their sha256; throws
  // gossamer::Error naming the missing, unreadable or corrupt file.
  static Gpt2Tokenizer load(const std::string& dir);

  Gpt2Tokenizer(Gpt2Tokenizer&&) noexcept;
  Gpt2Tokenizer& operator=(Gpt2Tokenizer&&) noexcept;
  ~Gpt2Tokenizer();

  std::vector<uint32_t> encode(std::string_view text) const;
  // Appends the tokens of text to out (what encode() returns).
  void encode_append(std::string_view text, std::vector<uint32_t>& out) const;

  // Concatenated bytes of the tokens; throws naming the first id >= vocab_size().
  std::string decode(std::span<const uint32_t> tokens) const;
  // The bytes of one token, for streaming generation: they may end inside a UTF-8 sequence
  // that the next token completes, so print the concatenation, not each token on its own.
  const std::string& decode_token(uint32_t token) const;

  uint32_t eot_token() const { return kEotToken; }
  uint32_t vocab_size() const { return kVocabSize; }

 private:
  struct Impl;
  explicit Gpt2Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Replaces every maximal invalid UTF-8 subpart by U+FFFD (EF BF BD), as the WHATWG decoder
// (Node's Buffer.toString('utf8')) does; returns the input unchanged when it is valid.
std::string sanitize_utf8(std::string_view text);

}  // namespace gossamer::data
