// SentencePiece tokenizer ("spm:MODEL_FILE" specs) through libsentencepiece: encode() returns
// exactly the ids of SentencePieceProcessor::Encode (and so of `spm_encode --output_format=id`)
// for the same string, with the model's own normalisation (gossamer-trained models use
// sentencepiece's default, nmt_nfkc with extra white space removed: newlines, tabs and runs of
// spaces become one space, so decode() gives back single spaces). The document token is BOS,
// else EOS (tokenizer.h). Invariant: the processor is loaded once and never mutated, so every
// method may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer.h"

namespace gossamer::data {

class SpmTokenizer final : public Tokenizer {
 public:
  // Loads a .model file; throws gossamer::Error naming the file when it is missing, unreadable
  // or not a SentencePiece model (sentencepiece's message included), or when the model has
  // neither a BOS nor an EOS piece.
  static std::unique_ptr<SpmTokenizer> load(const std::string& model_path);
  ~SpmTokenizer() override;

  std::string name() const override;
  uint32_t vocab_size() const override;
  std::vector<uint32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const uint32_t> tokens) const override;
  std::string decode_token(uint32_t token) const override;
  uint32_t document_token() const override;

  const std::string& model_path() const;
  // The piece text of an id ("▁the", "<0x0A>", "<s>"); throws for an id >= vocab_size().
  const std::string& piece(uint32_t token) const;
  // -1 when the model has no such piece.
  int unk_id() const;
  int bos_id() const;
  int eos_id() const;
  // True when the model has byte pieces (<0x00> ... <0xFF>): trained with byte fallback.
  bool byte_fallback() const;

 private:
  struct Impl;
  explicit SpmTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gossamer::data
