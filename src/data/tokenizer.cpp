// load_tokenizer(): spec parsing (tokenizer.h), and the adapter through which Gpt2Tokenizer
// implements the Tokenizer interface (Gpt2Tokenizer itself is unchanged: its own API, used by
// its tests, stays as it is).
#include "data/tokenizer.h"

#include <filesystem>

#include "core/error.h"
#include "data/gpt2_tokenizer.h"
#include "data/spm_tokenizer.h"

namespace gossamer::data {

Tokenizer::~Tokenizer() = default;

namespace {

class Gpt2Adapter final : public Tokenizer {
 public:
  Gpt2Adapter(Gpt2Tokenizer tok, std::string dir) : tok_(std::move(tok)), dir_(std::move(dir)) {}

  std::string name() const override { return "gpt2:" + dir_; }
  uint32_t vocab_size() const override { return tok_.vocab_size(); }
  std::vector<uint32_t> encode(std::string_view text) const override { return tok_.encode(text); }
  std::string decode(std::span<const uint32_t> tokens) const override {
    return tok_.decode(tokens);
  }
  std::string decode_token(uint32_t token) const override { return tok_.decode_token(token); }
  uint32_t document_token() const override { return tok_.eot_token(); }

 private:
  Gpt2Tokenizer tok_;
  std::string dir_;
};

std::unique_ptr<Tokenizer> load_gpt2(const std::string& dir) {
  return std::make_unique<Gpt2Adapter>(Gpt2Tokenizer::load(dir), dir);
}

// True when spec starts with "word:" (the kind prefix of tokenizer.h); sets *kind and *path.
bool split_kind(const std::string& spec, std::string* kind, std::string* path) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i) {
    const char c = spec[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  *kind = spec.substr(0, colon);
  *path = spec.substr(colon + 1);
  return true;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec) {
  GOSSAMER_CHECK(!spec.empty(),
                 "tokenizer: empty spec (expected gpt2:DIR, spm:MODEL_FILE or a GPT-2 directory)");
  std::string kind, path;
  if (!split_kind(spec, &kind, &path)) {
    // A plain path is a GPT-2 directory; a plain file is most likely an spm model.
    std::error_code ec;
    GOSSAMER_CHECK(!std::filesystem::is_regular_file(spec, ec),
                   "tokenizer \"%s\" is a file, but a plain path names a GPT-2 tokenizer "
                   "directory; for a SentencePiece model write \"spm:%s\"",
                   spec.c_str(), spec.c_str());
    return load_gpt2(spec);
  }
  GOSSAMER_CHECK(!path.empty(), "tokenizer \"%s\": empty path after \"%s:\"", spec.c_str(),
                 kind.c_str());
  if (kind == "gpt2") return load_gpt2(path);
  if (kind == "spm") return SpmTokenizer::load(path);
  fail(
      "tokenizer \"%s\": unknown kind \"%s\" (expected gpt2:DIR, spm:MODEL_FILE or a GPT-2 "
      "directory)",
      spec.c_str(), kind.c_str());
}

}  // namespace gossamer::data
