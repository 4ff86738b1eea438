// GPT-2 byte-level BPE, a port of gpt-3-encoder's Encoder.js (npm gpt-3-encoder 1.1.4) that
// must produce its exact tokens. Three pieces: (1) UTF-8 sanitising as Node's Buffer->string
// conversion does; (2) the pre-tokenisation pattern
//   /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu
// matched by hand, left to right, over code points (classes from unicode_tables.h);
// (3) the package's bpe() on the piece's bytes. bpe() ranks a pair by the text
// first + "," + second (a JS object key), so a pair that is not a merge can alias one whose
// key reads the same (e.g. ('",', '"') and ('"', ',"')); load() adds those aliases to the
// pair table. Of several pairs with the lowest rank it merges the LAST one's pair (JS object
// overwrite order), and then every non-overlapping occurrence of it, left to right.
// Invariant: every symbol in a word is a vocabulary token (bytes are; merges and aliases of the
// official files produce tokens, which load() checks), so words are vectors of token ids.
#include "data/gpt2_tokenizer.h"

#include <array>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"
#include "data/unicode_tables.h"

namespace gossamer::data {
namespace {

// ---- UTF-8 ---------------------------------------------------------------------------------

constexpr char32_t kInvalid = 0xFFFFFFFF;

// Decodes one code point at p[0..n) (n >= 1) per the WHATWG UTF-8 decoder. Returns the number
// of bytes consumed; on an invalid sequence sets cp = kInvalid and consumes the maximal
// subpart (at least one byte), leaving the offending byte for the next call.
int decode_utf8(const unsigned char* p, size_t n, char32_t& cp) {
  unsigned char b0 = p[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  int need;
  unsigned char lower = 0x80, upper = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lower = 0xA0;
    if (b0 == 0xED) upper = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lower = 0x90;
    if (b0 == 0xF4) upper = 0x8F;
  } else {
    cp = kInvalid;
    return 1;
  }
  for (int k = 1; k <= need; ++k) {
    if (size_t(k) >= n || p[k] < lower || p[k] > upper) {
      cp = kInvalid;
      return k;
    }
    cp = (cp << 6) | (p[k] & 0x3F);
    lower = 0x80;
    upper = 0xBF;
  }
  return need + 1;
}

// Decodes one code point of VALID UTF-8 at s[i] (i < size).
inline int decode_valid(const unsigned char* p, size_t n, size_t i, char32_t& cp) {
  unsigned char b0 = p[i];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  return decode_utf8(p + i, n - i, cp);
}

bool is_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    char32_t cp;
    int len = decode_utf8(p + i, n - i, cp);
    if (cp == kInvalid) return false;
    i += len;
  }
  return true;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// ---- pre-tokenisation ----------------------------------------------------------------------

// End (byte offset) of the pattern's match starting at i < s.size(); s is valid UTF-8.
size_t piece_end(const unsigned char* p, size_t n, size_t i) {
  char32_t c0;
  int l0 = decode_valid(p, n, i, c0);
  // 's|'t|'re|'ve|'m|'ll|'d  (ASCII apostrophe, lower case only)
  if (c0 == '\'' && i + 1 < n) {
    unsigned char a = p[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 < n) {
      unsigned char b = p[i + 2];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
  }
  //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+   (the optional prefix is a literal space)
  size_t k = i;
  char32_t c1 = c0;
  int l1 = l0;
  if (c0 == ' ') {
    if (i + 1 >= n) return n;  // a lone trailing space: \s+(?!\S)
    k = i + 1;
    l1 = decode_valid(p, n, k, c1);
  }
  UnicodeClass cls = unicode_class(c1);
  if (cls != UNICODE_CLASS_SPACE) {
    size_t e = k + l1;
    while (e < n) {
      char32_t c;
      int l = decode_valid(p, n, e, c);
      if (unicode_class(c) != cls) break;
      e += l;
    }
    return e;
  }
  // \s+(?!\S) | \s+ : a whitespace run that reaches the end is one piece; one followed by
  // non-space gives up its last code point (which then prefixes the next piece or stands
  // alone) unless it has only one.
  size_t e = i, last = i;
  while (e < n) {
    char32_t c;
    int l = decode_valid(p, n, e, c);
    if (unicode_class(c) != UNICODE_CLASS_SPACE) break;
    last = e;
    e += l;
  }
  if (e == n) return n;
  return last > i ? last : e;
}

// ---- GPT-2's byte <-> unicode mapping (bytes_to_unicode) -------------------------------------

struct ByteMap {
  std::array<char32_t, 256> byte_to_cp{};
  std::unordered_map<char32_t, uint8_t> cp_to_byte;
};

ByteMap make_byte_map() {
  ByteMap m;
  std::array<bool, 256> printable{};
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  int n = 0;
  for (int b = 0; b < 256; ++b) m.byte_to_cp[b] = printable[b] ? char32_t(b) : char32_t(256 + n++);
  for (int b = 0; b < 256; ++b) m.cp_to_byte[m.byte_to_cp[b]] = uint8_t(b);
  return m;
}

// The raw bytes a byte-level token string (UTF-8 of mapped code points) stands for; returns
// false if it contains a code point outside the mapping.
bool unmap_token(const ByteMap& m, std::string_view s, std::string& out) {
  out.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    char32_t cp;
    int len = decode_utf8(p + i, s.size() - i, cp);
    auto it = m.cp_to_byte.find(cp);
    if (it == m.cp_to_byte.end()) return false;
    out += char(it->second);
    i += len;
  }
  return true;
}

// ---- (left, right) token pair -> (rank, merged token): open addressing ----------------------

class PairTable {
 public:
  struct Value {
    uint32_t rank;
    uint32_t merged;
  };
  void reserve(size_t entries) {
    size_t cap = 16;
    shift_ = 60;
    while (cap < entries * 2) {
      cap *= 2;
      --shift_;
    }
    keys_.assign(cap, kEmpty);
    values_.assign(cap, Value{0, 0});
    mask_ = cap - 1;
  }
  static uint64_t key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }
  bool contains(uint64_t k) const { return find(k) != nullptr; }
  void insert(uint64_t k, Value v) {  // overwrites
    size_t i = slot(k);
    while (keys_[i] != kEmpty && keys_[i] != k) i = (i + 1) & mask_;
    if (keys_[i] == kEmpty) ++size_;
    keys_[i] = k;
    values_[i] = v;
  }
  const Value* find(uint64_t k) const {
    size_t i = slot(k);
    while (true) {
      if (keys_[i] == k) return &values_[i];
      if (keys_[i] == kEmpty) return nullptr;
      i = (i + 1) & mask_;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  // Fibonacci hashing: the top log2(capacity) bits of the product.
  size_t slot(uint64_t k) const { return size_t((k * 0x9E3779B97F4A7C15ull) >> shift_); }
  std::vector<uint64_t> keys_;
  std::vector<Value> values_;
  size_t mask_ = 0;
  int shift_ = 60;
  size_t size_ = 0;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  GOSSAMER_CHECK(f.good(), "%s: cannot open for reading", path.c_str());
  std::ostringstream ss;
  ss << f.rdbuf();
  GOSSAMER_CHECK(!f.bad(), "%s: read error", path.c_str());
  return ss.str();
}

bool file_exists(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return f.good();
}

// Both files must exist and be GPT-2's exact files (sha256) before anything is parsed.
void verify_files(const std::string& enc_path, const std::string& bpe_path) {
  for (const auto& [path, want] : {std::pair{enc_path, std::string(Gpt2Tokenizer::kEncoderSha256)},
                                   std::pair{bpe_path, std::string(Gpt2Tokenizer::kVocabSha256)}}) {
    GOSSAMER_CHECK(file_exists(path),
                   "GPT-2 tokenizer file %s not found (scripts/get-tokenizer.sh installs it)",
                   path.c_str());
    std::string got = sha256_file_hex(path);
    GOSSAMER_CHECK(got == want,
                   "GPT-2 tokenizer file %s is corrupt or not GPT-2's: sha256 %s, expected %s "
                   "(rerun scripts/get-tokenizer.sh)",
                   path.c_str(), got.c_str(), want.c_str());
  }
}

// text split on "\n" as JS's split does: the part after the last newline is an element too.
std::vector<std::string_view> split_lines(const std::string& text) {
  std::vector<std::string_view> lines;
  for (size_t pos = 0;;) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      lines.emplace_back(text.data() + pos, text.size() - pos);
      break;
    }
    lines.emplace_back(text.data() + pos, nl - pos);
    pos = nl + 1;
  }
  return lines;
}

// Bound on the per-call cache of BPE results, so that one huge encode() stays bounded.
constexpr size_t kMaxCacheEntries = 1 << 16;

}  // namespace

std::string sanitize_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0, n = text.size();
  while (i < n) {
    char32_t cp;
    int len = decode_utf8(p + i, n - i, cp);
    if (cp == kInvalid)
      append_utf8(out, 0xFFFD);
    else
      out.append(text.substr(i, size_t(len)));
    i += len;
  }
  return out;
}

struct Gpt2Tokenizer::Impl {
  std::vector<std::string> token_bytes;  // id -> bytes
  std::array<uint32_t, 256> byte_token{};
  PairTable pairs;

  void bpe(std::string_view piece, std::vector<uint32_t>& word) const;

  // The steps of load(), in order. by_bytes maps a token's bytes to its id.
  using ByBytes = std::unordered_map<std::string, uint32_t>;
  struct Merge {
    std::string left, right;
  };
  // encoder.json into token_bytes and byte_token; returns by_bytes.
  ByBytes read_encoder(const std::string& path, const ByteMap& bm);
  // vocab.bpe into pairs (rank = line order); returns the merges, as bytes.
  std::vector<Merge> read_merges(const std::string& path, const ByteMap& bm,
                                 const ByBytes& by_bytes);
  // The pairs whose JS key reads like a merge's, with that merge's rank (see the top).
  void add_aliases(const std::string& path, const std::vector<Merge>& merges,
                   const ByBytes& by_bytes);
};

// gpt-3-encoder's bpe(): repeatedly merge the pair with the lowest rank (the last such pair if
// several share it), every non-overlapping occurrence left to right, until none is ranked.
void Gpt2Tokenizer::Impl::bpe(std::string_view piece, std::vector<uint32_t>& word) const {
  word.clear();
  for (unsigned char b : piece) word.push_back(byte_token[b]);
  while (word.size() > 1) {
    uint32_t best_rank = UINT32_MAX;
    size_t best = 0;
    const PairTable::Value* best_v = nullptr;
    for (size_t j = 0; j + 1 < word.size(); ++j) {
      const PairTable::Value* v = pairs.find(PairTable::key(word[j], word[j + 1]));
      if (v != nullptr && v->rank <= best_rank) {
        best_rank = v->rank;
        best = j;
        best_v = v;
      }
    }
    if (best_v == nullptr) break;
    const uint32_t first = word[best], second = word[best + 1], merged = best_v->merged;
    size_t out = 0;
    for (size_t j = 0; j < word.size();) {
      if (word[j] == first && j + 1 < word.size() && word[j + 1] == second) {
        word[out++] = merged;
        j += 2;
      } else {
        word[out++] = word[j++];
      }
    }
    word.resize(out);
  }
}

Gpt2Tokenizer::Gpt2Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gpt2Tokenizer::Gpt2Tokenizer(Gpt2Tokenizer&&) noexcept = default;
Gpt2Tokenizer& Gpt2Tokenizer::operator=(Gpt2Tokenizer&&) noexcept = default;
Gpt2Tokenizer::~Gpt2Tokenizer() = default;

Gpt2Tokenizer Gpt2Tokenizer::load(const std::string& dir) {
  const std::string enc_path = dir + "/" + kEncoderFile;
  const std::string bpe_path = dir + "/" + kVocabFile;
  verify_files(enc_path, bpe_path);
  auto impl = std::make_unique<Impl>();
  const ByteMap bm = make_byte_map();
  const Impl::ByBytes by_bytes = impl->read_encoder(enc_path, bm);
  const std::vector<Impl::Merge> merges = impl->read_merges(bpe_path, bm, by_bytes);
  impl->add_aliases(bpe_path, merges, by_bytes);
  return Gpt2Tokenizer(std::move(impl));
}

// encoder.json: {"<byte-level token string>": id, ...}, ids 0..50256 each exactly once.
Gpt2Tokenizer::Impl::ByBytes Gpt2Tokenizer::Impl::read_encoder(const std::string& enc_path,
                                                               const ByteMap& bm) {
  nlohmann::json enc;
  try {
    enc = nlohmann::json::parse(read_file(enc_path));
  } catch (const nlohmann::json::exception& e) {
    fail("%s: invalid JSON: %s", enc_path.c_str(), e.what());
  }
  GOSSAMER_CHECK(enc.is_object() && enc.size() == kVocabSize,
                 "%s: expected an object of %u tokens, found %zu entries", enc_path.c_str(),
                 kVocabSize, enc.size());
  token_bytes.assign(kVocabSize, std::string());
  std::vector<bool> seen(kVocabSize, false);
  ByBytes by_bytes;
  by_bytes.reserve(kVocabSize * 2);
  std::string bytes;
  for (const auto& [key, val] : enc.items()) {
    GOSSAMER_CHECK(val.is_number_unsigned() && val.get<uint64_t>() < kVocabSize,
                   "%s: token \"%s\": expected an id below %u", enc_path.c_str(), key.c_str(),
                   kVocabSize);
    uint32_t id = val.get<uint32_t>();
    GOSSAMER_CHECK(!seen[id], "%s: id %u appears twice", enc_path.c_str(), id);
    GOSSAMER_CHECK(unmap_token(bm, key, bytes),
                   "%s: token \"%s\" has a character outside GPT-2's byte mapping",
                   enc_path.c_str(), key.c_str());
    seen[id] = true;
    token_bytes[id] = bytes;
    by_bytes.emplace(bytes, id);
  }
  for (int b = 0; b < 256; ++b) {
    auto it = by_bytes.find(std::string(1, char(b)));
    GOSSAMER_CHECK(it != by_bytes.end(), "%s: no token for byte 0x%02x", enc_path.c_str(), b);
    byte_token[b] = it->second;
  }
  GOSSAMER_CHECK(token_bytes[kEotToken] == "<|endoftext|>", "%s: token %u is not <|endoftext|>",
                 enc_path.c_str(), kEotToken);
  return by_bytes;
}

// vocab.bpe: like Encoder.js, drop the first line ("#version") and the last element of the
// split on "\n" (empty after the final newline); each merge is "left right".
std::vector<Gpt2Tokenizer::Impl::Merge> Gpt2Tokenizer::Impl::read_merges(
    const std::string& bpe_path, const ByteMap& bm, const ByBytes& by_bytes) {
  const std::string text = read_file(bpe_path);
  const std::vector<std::string_view> lines = split_lines(text);
  GOSSAMER_CHECK(lines.size() >= 2, "%s: expected a version line and merges", bpe_path.c_str());
  std::vector<Merge> merges;
  merges.reserve(lines.size());
  pairs.reserve(lines.size() + 64);
  std::string left, right;
  for (size_t li = 1; li + 1 < lines.size(); ++li) {
    std::string_view line = lines[li];
    size_t sp = line.find(' ');
    GOSSAMER_CHECK(sp != std::string_view::npos && sp > 0 && sp + 1 < line.size() &&
                       line.find(' ', sp + 1) == std::string_view::npos,
                   "%s: line %zu: expected \"left right\", found \"%.*s\"", bpe_path.c_str(),
                   li + 1, int(line.size()), line.data());
    GOSSAMER_CHECK(
        unmap_token(bm, line.substr(0, sp), left) && unmap_token(bm, line.substr(sp + 1), right),
        "%s: line %zu: character outside GPT-2's byte mapping", bpe_path.c_str(), li + 1);
    auto l = by_bytes.find(left), r = by_bytes.find(right), m = by_bytes.find(left + right);
    GOSSAMER_CHECK(l != by_bytes.end() && r != by_bytes.end() && m != by_bytes.end(),
                   "%s: line %zu: merge \"%.*s\" uses or makes a token missing from %s",
                   bpe_path.c_str(), li + 1, int(line.size()), line.data(), kEncoderFile);
    const uint32_t rank = uint32_t(merges.size());
    pairs.insert(PairTable::key(l->second, r->second), {rank, m->second});
    merges.push_back({left, right});
  }
  return merges;
}

// Aliases: the pair (p, q) with p + "," + q == left + "," + right gets that merge's rank.
void Gpt2Tokenizer::Impl::add_aliases(const std::string& bpe_path, const std::vector<Merge>& merges,
                                      const ByBytes& by_bytes) {
  for (uint32_t rank = 0; rank < merges.size(); ++rank) {
    const std::string joined = merges[rank].left + "," + merges[rank].right;
    for (size_t c = 1; c + 1 < joined.size(); ++c) {
      if (joined[c] != ',' || c == merges[rank].left.size()) continue;
      auto p = by_bytes.find(joined.substr(0, c)), q = by_bytes.find(joined.substr(c + 1));
      if (p == by_bytes.end() || q == by_bytes.end()) continue;
      const uint64_t k = PairTable::key(p->second, q->second);
      // Two merges with the same joined text would make Encoder.js keep only the later rank.
      GOSSAMER_CHECK(!pairs.contains(k),
                     "%s: merges %u and another share the key \"%s\" (unsupported file)",
                     bpe_path.c_str(), rank, joined.c_str());
      auto m = by_bytes.find(joined.substr(0, c) + joined.substr(c + 1));
      GOSSAMER_CHECK(m != by_bytes.end(),
                     "%s: merge %u aliases a pair whose merge is not a token (unsupported file)",
                     bpe_path.c_str(), rank);
      pairs.insert(k, {rank, m->second});
    }
  }
}

void Gpt2Tokenizer::encode_append(std::string_view text, std::vector<uint32_t>& out) const {
  std::string sanitized;
  if (!is_valid_utf8(text)) {
    sanitized = sanitize_utf8(text);
    text = sanitized;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  // Cache of BPE results by piece (views into text): offset and length in `arena`.
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;
  std::vector<uint32_t> arena, word;
  for (size_t i = 0; i < n;) {
    const size_t e = piece_end(p, n, i);
    const std::string_view piece = text.substr(i, e - i);
    i = e;
    if (piece.size() == 1) {
      out.push_back(impl_->byte_token[p[e - 1]]);
      continue;
    }
    auto it = cache.find(piece);
    if (it != cache.end()) {
      out.insert(out.end(), arena.begin() + it->second.first,
                 arena.begin() + it->second.first + it->second.second);
      continue;
    }
    impl_->bpe(piece, word);
    out.insert(out.end(), word.begin(), word.end());
    if (cache.size() >= kMaxCacheEntries) {
      cache.clear();
      arena.clear();
    }
    cache.emplace(piece, std::pair{uint32_t(arena.size()), uint32_t(word.size())});
    arena.insert(arena.end(), word.begin(), word.end());
  }
}

std::vector<uint32_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 8);
  encode_append(text, out);
  return out;
}

const std::string& Gpt2Tokenizer::decode_token(uint32_t token) const {
  GOSSAMER_CHECK(token < kVocabSize,
                 "GPT-2 decode: token id %u is not below the vocabulary size %u", token,
                 kVocabSize);
  return impl_->token_bytes[token];
}

std::string Gpt2Tokenizer::decode(std::span<const uint32_t> tokens) const {
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    GOSSAMER_CHECK(tokens[i] < kVocabSize,
                   "GPT-2 decode: token %zu has id %u, not below the vocabulary size %u", i,
                   tokens[i], kVocabSize);
    out += impl_->token_bytes[tokens[i]];
  }
  return out;
}

}  // namespace gossamer::data
