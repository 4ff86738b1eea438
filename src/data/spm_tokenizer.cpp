// SpmTokenizer: a thin wrapper over sentencepiece::SentencePieceProcessor. The model file is
// read by us (so a missing or unreadable file gets our message naming it) and parsed with
// LoadFromSerializedProto (so a corrupt one gets sentencepiece's status message). A table of
// each piece's surface bytes, built once at load, serves decode_token().
#include "data/spm_tokenizer.h"

#include <sentencepiece_processor.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace gossamer::data {

namespace {

constexpr std::string_view kSpaceSymbol = "\xe2\x96\x81";  // U+2581 "▁"

std::string replace_space_symbol(const std::string& piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
      out += ' ';
      i += kSpaceSymbol.size();
    } else {
      out += piece[i++];
    }
  }
  return out;
}

// "<0xAB>" -> the byte 0xAB.
bool parse_byte_piece(const std::string& piece, char* byte) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return false;
  unsigned value = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = piece[size_t(i)];
    unsigned d;
    if (c >= '0' && c <= '9')
      d = unsigned(c - '0');
    else if (c >= 'A' && c <= 'F')
      d = unsigned(c - 'A' + 10);
    else if (c >= 'a' && c <= 'f')
      d = unsigned(c - 'a' + 10);
    else
      return false;
    value = value * 16 + d;
  }
  *byte = char(value);
  return true;
}

std::string read_model_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    fail(
        "spm tokenizer model %s not found (gossamer prep --train-spm trains one; see "
        "docs/DATA.md)",
        path.c_str());
  GOSSAMER_CHECK(!std::filesystem::is_directory(status),
                 "spm tokenizer model %s is a directory, expected a .model file", path.c_str());
  std::ifstream in(path, std::ios::binary);
  GOSSAMER_CHECK(in.good(), "spm tokenizer model %s: cannot open for reading: %s", path.c_str(),
                 std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  GOSSAMER_CHECK(!in.bad(), "spm tokenizer model %s: read error", path.c_str());
  return ss.str();
}

}  // namespace

struct SpmTokenizer::Impl {
  std::string path;
  sentencepiece::SentencePieceProcessor sp;
  std::vector<std::string> surface;  // per id: what decode_token() returns
  uint32_t vocab = 0;
  uint32_t document = 0;
  bool byte_fallback = false;

  void check_id(uint32_t token, const char* what) const {
    GOSSAMER_CHECK(token < vocab, "spm tokenizer %s: %s %u is outside the vocabulary (%u pieces)",
                   path.c_str(), what, token, vocab);
  }
};

SpmTokenizer::SpmTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SpmTokenizer::~SpmTokenizer() = default;

std::unique_ptr<SpmTokenizer> SpmTokenizer::load(const std::string& model_path) {
  GOSSAMER_CHECK(!model_path.empty(), "spm tokenizer: empty model path");
  auto impl = std::make_unique<Impl>();
  impl->path = model_path;
  const std::string bytes = read_model_file(model_path);
  const auto status = impl->sp.LoadFromSerializedProto(bytes);
  if (!status.ok())
    fail("spm tokenizer model %s is corrupt or not a SentencePiece model: %s", model_path.c_str(),
         status.ToString().c_str());
  const int n = impl->sp.GetPieceSize();
  GOSSAMER_CHECK(n > 0, "spm tokenizer model %s has no pieces", model_path.c_str());
  impl->vocab = uint32_t(n);
  const int doc = impl->sp.bos_id() >= 0 ? impl->sp.bos_id() : impl->sp.eos_id();
  GOSSAMER_CHECK(doc >= 0 && doc < n,
                 "spm tokenizer model %s has neither a BOS nor an EOS piece; gossamer needs one "
                 "to mark the start of each document",
                 model_path.c_str());
  impl->document = uint32_t(doc);
  impl->surface.resize(size_t(n));
  for (int id = 0; id < n; ++id) {
    std::string& s = impl->surface[size_t(id)];
    const std::string& piece = impl->sp.IdToPiece(id);
    char byte;
    if (impl->sp.IsControl(id)) {
      s.clear();
    } else if (impl->sp.IsUnknown(id)) {
      s = impl->sp.DecodeIds({id});  // the model's unk surface (" ⁇ " by default)
    } else if (impl->sp.IsByte(id) && parse_byte_piece(piece, &byte)) {
      s.assign(1, byte);
      impl->byte_fallback = true;
    } else {
      s = replace_space_symbol(piece);
    }
  }
  return std::unique_ptr<SpmTokenizer>(new SpmTokenizer(std::move(impl)));
}

std::string SpmTokenizer::name() const {
  return "spm:" + impl_->path;
}
uint32_t SpmTokenizer::vocab_size() const {
  return impl_->vocab;
}
uint32_t SpmTokenizer::document_token() const {
  return impl_->document;
}
const std::string& SpmTokenizer::model_path() const {
  return impl_->path;
}
int SpmTokenizer::unk_id() const {
  return impl_->sp.unk_id();
}
int SpmTokenizer::bos_id() const {
  return impl_->sp.bos_id();
}
int SpmTokenizer::eos_id() const {
  return impl_->sp.eos_id();
}
bool SpmTokenizer::byte_fallback() const {
  return impl_->byte_fallback;
}

const std::string& SpmTokenizer::piece(uint32_t token) const {
  impl_->check_id(token, "token");
  return impl_->sp.IdToPiece(int(token));
}

std::vector<uint32_t> SpmTokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = impl_->sp.Encode(text, &ids);
  if (!status.ok())
    fail("spm tokenizer %s: cannot encode %zu bytes of text: %s", impl_->path.c_str(), text.size(),
         status.ToString().c_str());
  return std::vector<uint32_t>(ids.begin(), ids.end());
}

std::string SpmTokenizer::decode(std::span<const uint32_t> tokens) const {
  std::vector<int> ids(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    GOSSAMER_CHECK(tokens[i] < impl_->vocab,
                   "spm tokenizer %s: cannot decode token %zu: id %u is outside the vocabulary "
                   "(%u pieces)",
                   impl_->path.c_str(), i, tokens[i], impl_->vocab);
    ids[i] = int(tokens[i]);
  }
  std::string out;
  const auto status = impl_->sp.Decode(ids, &out);
  if (!status.ok())
    fail("spm tokenizer %s: cannot decode %zu tokens: %s", impl_->path.c_str(), tokens.size(),
         status.ToString().c_str());
  return out;
}

std::string SpmTokenizer::decode_token(uint32_t token) const {
  impl_->check_id(token, "token");
  return impl_->surface[token];
}

}  // namespace gossamer::data
