// Tests of the tokenizer interface (load_tokenizer specs), SentencePiece training (spm_train)
// and SpmTokenizer, and prep with spm: small BPE and unigram models (byte fallback on and off)
// are trained once per suite on text this test writes. Whole-corpus parity with spm_encode is
// tests/e2e/test_spm_parity.sh. The GPT-2 checks need the GPT-2 files (GOSSAMER_TOKENIZER_DIR
// or <source>/data/tokenizers/gpt2) and FAIL saying so when they are missing.
#include <gtest/gtest.h>
#include <omp.h>
#include <sentencepiece_processor.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "data/prep.h"
#include "data/shard.h"
#include "data/spm_tokenizer.h"
#include "data/spm_train.h"
#include "data/tokenizer.h"
#include "test_util.h"

namespace gossamer::data {
namespace {

namespace fs = std::filesystem;

using gossamer::testing::TempDir;

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
  ASSERT_TRUE(f.good()) << path;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Expects fn to throw gossamer::Error whose message contains every one of `parts`.
using gossamer::testing::expect_error;

std::string gpt2_dir() {
  const char* env = std::getenv("GOSSAMER_TOKENIZER_DIR");
  if (env && *env) return env;
  return std::string(GOSSAMER_SOURCE_DIR) + "/data/tokenizers/gpt2";
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xF0 | (cp >> 18));
    s += char(0x80 | ((cp >> 12) & 0x3F));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

// About 150 KB of English-like text with a few accented words: documents of 1-4 lines separated
// by blank lines. Deterministic.
std::string training_text() {
  static const char* kWords[] = {
      "the",     "of",     "and",      "to",      "in",       "a",         "is",       "that",
      "for",     "it",     "as",       "was",     "with",     "be",        "by",       "on",
      "not",     "he",     "this",     "are",     "or",       "his",       "from",     "at",
      "which",   "but",    "have",     "an",      "had",      "they",      "you",      "were",
      "their",   "one",    "all",      "we",      "can",      "her",       "has",      "there",
      "been",    "if",     "more",     "when",    "will",     "would",     "who",      "so",
      "king",    "river",  "mountain", "city",    "garden",   "morning",   "evening",  "light",
      "water",   "stone",  "people",   "house",   "bread",    "silver",    "golden",   "shepherd",
      "naïve",   "café",   "Zürich",   "façade",  "jalapeño", "coöperate", "résumé",   "Ærø",
      "running", "walked", "spoken",   "written", "quickly",  "slowly",    "brightly", "together"};
  constexpr size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);
  Rng rng(7);
  std::string text;
  for (int doc = 0; doc < 400; ++doc) {
    if (doc > 0) text += '\n';
    const int lines = 1 + int(rng.next_u64() % 4);
    for (int l = 0; l < lines; ++l) {
      const int words = 8 + int(rng.next_u64() % 40);
      for (int w = 0; w < words; ++w) {
        std::string word;
        if (rng.next_u64() % 3 == 0) {  // an invented word: 1-3 syllables
          static const char* kSyllables[] = {"ka",  "lo", "mi",  "ter", "an", "su", "pre", "vo",
                                             "del", "ri", "ost", "qua", "ne", "bu", "zé",  "ön"};
          const int syllables = 1 + int(rng.next_u64() % 3);
          for (int k = 0; k < syllables; ++k) word += kSyllables[rng.next_u64() % 16];
        } else {
          word = kWords[rng.next_u64() % kNumWords];
        }
        if (w == 0) word[0] = char(std::toupper(static_cast<unsigned char>(word[0])));
        text += word;
        text += (w + 1 == words) ? "." : (rng.next_u64() % 9 == 0 ? ", " : " ");
      }
      text += '\n';
    }
  }
  return text;
}

// ---- trained models, shared by the suite ----------------------------------------------------

struct ModelKey {
  SpmModelType type;
  bool byte_fallback;
  bool operator<(const ModelKey& o) const {
    return std::tie(type, byte_fallback) < std::tie(o.type, o.byte_fallback);
  }
};

class SpmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    corpus_ = dir_->file("corpus.txt");
    std::ofstream(corpus_, std::ios::binary) << training_text();
    for (SpmModelType type : {SPM_MODEL_TYPE_BPE, SPM_MODEL_TYPE_UNIGRAM})
      for (bool bf : {false, true}) {
        SpmTrainOptions opt;
        opt.inputs = {corpus_};
        opt.model_prefix = dir_->file(std::string(spm_model_type_name(type)) + (bf ? "_bf" : ""));
        opt.model_type = type;
        opt.vocab_size = 600;
        opt.byte_fallback = bf;
        try {
          models_[{type, bf}] = spm_train(opt).model_path;
        } catch (const Error& e) {
          errors_ += std::string(e.what()) + "\n";
        }
      }
  }
  static void TearDownTestSuite() { dir_.reset(); }
  void SetUp() override { ASSERT_TRUE(errors_.empty()) << errors_; }

  static const std::string& model(SpmModelType type, bool byte_fallback) {
    return models_.at({type, byte_fallback});
  }
  static std::unique_ptr<SpmTokenizer> load(SpmModelType type, bool byte_fallback) {
    return SpmTokenizer::load(model(type, byte_fallback));
  }
  static const std::string& corpus() { return corpus_; }

 private:
  static std::unique_ptr<TempDir> dir_;
  static std::string corpus_, errors_;
  static std::map<ModelKey, std::string> models_;
};
std::unique_ptr<TempDir> SpmTest::dir_;
std::string SpmTest::corpus_, SpmTest::errors_;
std::map<ModelKey, std::string> SpmTest::models_;

const std::vector<std::pair<SpmModelType, bool>> kAllModels = {{SPM_MODEL_TYPE_BPE, false},
                                                               {SPM_MODEL_TYPE_BPE, true},
                                                               {SPM_MODEL_TYPE_UNIGRAM, false},
                                                               {SPM_MODEL_TYPE_UNIGRAM, true}};

std::string label(SpmModelType type, bool bf) {
  return std::string(spm_model_type_name(type)) + (bf ? " with byte fallback" : "");
}

TEST_F(SpmTest, TrainedFilesAndSpecialPieces) {
  for (auto [type, bf] : kAllModels) {
    SCOPED_TRACE(label(type, bf));
    const std::string path = model(type, bf);
    const std::string prefix = path.substr(0, path.size() - 6);
    EXPECT_TRUE(fs::exists(prefix + ".vocab"));
    EXPECT_EQ(gossamer::testing::temporaries_in(fs::path(path).parent_path().string()),
              std::vector<std::string>{});
    const auto tok = load(type, bf);
    EXPECT_EQ(tok->vocab_size(), 600u);
    EXPECT_EQ(tok->name(), "spm:" + path);
    EXPECT_EQ(tok->unk_id(), 0);
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->document_token(), 1u);  // BOS
    EXPECT_EQ(tok->piece(1), "<s>");
    EXPECT_EQ(tok->byte_fallback(), bf);
    if (bf) {
      EXPECT_EQ(tok->piece(3 + 0x41), "<0x41>");
    }
    // The .vocab file: "piece<TAB>score" per id, as spm_train writes it.
    std::istringstream vocab(read_file(prefix + ".vocab"));
    std::string line;
    uint32_t n = 0;
    while (std::getline(vocab, line)) {
      ASSERT_LT(n, tok->vocab_size());
      EXPECT_EQ(line.substr(0, line.find('\t')), tok->piece(n)) << "line " << n;
      ++n;
    }
    EXPECT_EQ(n, tok->vocab_size());
    // Control pieces are never produced from text (without byte fallback, '<', '/' and '>'
    // are unknown characters: <unk>, id 0).
    for (uint32_t t : tok->encode("<s> </s> text")) {
      EXPECT_NE(t, 1u);
      EXPECT_NE(t, 2u);
    }
  }
}

TEST_F(SpmTest, EncodeEqualsSentencepieceAndIsThreadSafe) {
  std::vector<std::string> texts;
  std::istringstream lines(training_text());
  for (std::string line; std::getline(lines, line) && texts.size() < 200;) texts.push_back(line);
  texts.push_back("Unseen: Ωμέγα 中文 🎉 and tabs\tand  double  spaces\nand newlines ");
  for (auto [type, bf] : kAllModels) {
    SCOPED_TRACE(label(type, bf));
    const auto tok = load(type, bf);
    sentencepiece::SentencePieceProcessor sp;
    ASSERT_TRUE(sp.Load(model(type, bf)).ok());
    std::vector<std::vector<uint32_t>> serial(texts.size()), parallel(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      std::vector<int> want;
      ASSERT_TRUE(sp.Encode(texts[i], &want).ok());
      serial[i] = tok->encode(texts[i]);
      EXPECT_EQ(serial[i], std::vector<uint32_t>(want.begin(), want.end())) << texts[i];
    }
    const int64_t n = int64_t(texts.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(4)
    for (int64_t i = 0; i < n; ++i) parallel[size_t(i)] = tok->encode(texts[size_t(i)]);
    EXPECT_EQ(parallel, serial);
  }
}

// Text the default normalisation (nmt_nfkc, extra white space removed) leaves unchanged: NFKC
// characters, single spaces, no leading or trailing space, no control characters.
const std::vector<std::string> kNormalizedTexts = {
    "Hello, world! The king walked to the river.",
    "naïve café in Zürich, façade and jalapeño",
    "Unseen letters: Ωμέγα, Привет, 中文, 日本語, 한국어, עברית, ไทย",
    "Emoji 🎉🚀 and symbols ∑∫√ ¥€",
    "x",
};

TEST_F(SpmTest, RoundTripWithByteFallback) {
  for (SpmModelType type : {SPM_MODEL_TYPE_BPE, SPM_MODEL_TYPE_UNIGRAM}) {
    SCOPED_TRACE(label(type, true));
    const auto tok = load(type, true);
    for (const std::string& text : kNormalizedTexts) {
      const auto ids = tok->encode(text);
      EXPECT_EQ(tok->decode(ids), text);
      for (uint32_t t : ids) EXPECT_NE(int(t), tok->unk_id()) << text;
      // Streaming: the pieces' bytes concatenated are the text after the dummy-prefix space.
      std::string streamed;
      for (uint32_t t : ids) streamed += tok->decode_token(t);
      EXPECT_EQ(streamed, " " + text);
    }
    // Unseen characters become their UTF-8 bytes.
    const auto ids = tok->encode("中");
    ASSERT_GE(ids.size(), 3u);
    EXPECT_EQ(tok->piece(ids[ids.size() - 3]), "<0xE4>");
    EXPECT_EQ(tok->decode_token(ids.back()), "\xad");
    // Text the normaliser changes decodes to its normal form: white space collapsed, NFKC.
    EXPECT_EQ(tok->decode(tok->encode("  two\n\nlines\tand   spaces  ")), "two lines and spaces");
    EXPECT_EQ(tok->decode(tok->encode("ﬁne ①")), "fine 1");
    EXPECT_TRUE(tok->encode("").empty());
    EXPECT_EQ(tok->decode({}), "");
    // The document token decodes to nothing.
    const std::vector<uint32_t> with_doc = {tok->document_token(), tok->encode("king")[0]};
    EXPECT_EQ(tok->decode(with_doc), tok->decode(std::vector<uint32_t>{with_doc[1]}));
  }
}

// Without byte fallback a character outside the vocabulary becomes <unk> (id 0), one per run of
// unknown characters, and decodes to " ⁇ " (U+2047 between spaces); the rest round-trips.
TEST_F(SpmTest, UnknownCharactersWithoutByteFallback) {
  for (SpmModelType type : {SPM_MODEL_TYPE_BPE, SPM_MODEL_TYPE_UNIGRAM}) {
    SCOPED_TRACE(label(type, false));
    const auto tok = load(type, false);
    const std::string seen = "The king walked to the river, slowly.";
    EXPECT_EQ(tok->decode(tok->encode(seen)), seen);
    const auto ids = tok->encode("the 中文 river");
    EXPECT_NE(std::find(ids.begin(), ids.end(), uint32_t(tok->unk_id())), ids.end());
    const std::string decoded = tok->decode(ids);
    EXPECT_EQ(decoded.find("中"), std::string::npos) << decoded;
    EXPECT_NE(decoded.find("\xe2\x81\x87"), std::string::npos) << decoded;
    EXPECT_EQ(decoded.find("the"), 0u) << decoded;
    EXPECT_EQ(decoded.substr(decoded.size() - 5), "river") << decoded;
    EXPECT_EQ(tok->decode_token(uint32_t(tok->unk_id())), " \xe2\x81\x87 ");
  }
}

// With identity normalisation (white space kept) and byte fallback, decode(encode(x)) == x for
// any valid UTF-8 x.
TEST_F(SpmTest, IdentityNormalizationRoundTripsAnyValidUtf8) {
  TempDir dir;
  SpmTrainOptions opt;
  opt.inputs = {corpus()};
  opt.model_prefix = dir.file("identity");
  opt.vocab_size = 600;
  opt.byte_fallback = true;
  opt.identity_normalization = true;
  const auto tok = SpmTokenizer::load(spm_train(opt).model_path);
  std::vector<std::string> texts = kNormalizedTexts;
  texts.insert(texts.end(), {" leading", "trailing ", "  two\n\nlines\tand   spaces  ", "\r\n",
                             "ﬁne ①", "\x01\x7f", std::string("nul\0byte", 8)});
  Rng rng(11);
  for (int i = 0; i < 300; ++i) {
    std::string s;
    const int n = int(rng.next_u64() % 20);
    for (int j = 0; j < n; ++j) {
      uint32_t cp;
      switch (rng.next_u64() % 4) {
        case 0:
          cp = uint32_t(rng.next_u64() % 0x80);
          break;
        case 1:
          cp = 0x80 + uint32_t(rng.next_u64() % 0x780);
          break;
        case 2:
          cp = 0x800 + uint32_t(rng.next_u64() % 0xF800);
          break;
        default:
          cp = 0x10000 + uint32_t(rng.next_u64() % 0x100000);
          break;
      }
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'x';  // surrogates are not valid UTF-8
      s += utf8(cp);
    }
    texts.push_back(s);
  }
  for (const std::string& text : texts) {
    const auto ids = tok->encode(text);
    EXPECT_EQ(tok->decode(ids), text) << "text of " << text.size() << " bytes";
  }
}

TEST_F(SpmTest, DecodeRejectsIdsOutsideTheVocabulary) {
  const auto tok = load(SPM_MODEL_TYPE_BPE, true);
  const std::vector<uint32_t> bad = {10, 600};
  expect_error([&] { tok->decode(bad); }, {"token 1", "600", model(SPM_MODEL_TYPE_BPE, true)});
  expect_error([&] { tok->decode_token(600); }, {"600", "outside the vocabulary"});
}

TEST_F(SpmTest, TrainingIsDeterministicAndPathIndependent) {
  TempDir a, b;
  for (SpmModelType type : {SPM_MODEL_TYPE_BPE, SPM_MODEL_TYPE_UNIGRAM}) {
    SpmTrainOptions opt;
    opt.inputs = {corpus()};
    opt.model_type = type;
    opt.vocab_size = 600;
    opt.model_prefix = a.file("m");
    spm_train(opt);
    opt.model_prefix = b.file("sub/other");
    spm_train(opt);
    EXPECT_EQ(read_file(a.file("m.model")), read_file(b.file("sub/other.model")));
    EXPECT_EQ(read_file(a.file("m.vocab")), read_file(b.file("sub/other.vocab")));
    EXPECT_EQ(read_file(a.file("m.model")), read_file(model(type, false)));
  }
}

TEST_F(SpmTest, TrainingErrorsLeaveNothingBehind) {
  TempDir dir;
  SpmTrainOptions opt;
  opt.inputs = {corpus()};
  opt.model_prefix = dir.file("big");
  opt.vocab_size = 100000;  // far more pieces than this text has
  expect_error([&] { spm_train(opt); }, {dir.file("big.model"), "Vocabulary size"});
  opt.inputs = {dir.file("missing.txt")};
  expect_error([&] { spm_train(opt); }, {"missing.txt", "cannot open"});
  write_file(dir.file("blank.txt"), "\n  \n\t\n");
  opt.inputs = {dir.file("blank.txt")};
  opt.vocab_size = 100;
  expect_error([&] { spm_train(opt); }, {"no text", "blank.txt"});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1)
      << "only blank.txt may exist";
  expect_error([&] { parse_spm_model_type("word"); }, {"word", "bpe", "unigram"});
  EXPECT_EQ(parse_spm_model_type("unigram"), SPM_MODEL_TYPE_UNIGRAM);
  opt.inputs = {corpus()};
  opt.character_coverage = 0;
  expect_error([&] { spm_train(opt); }, {"character coverage"});
}

// ---- loading errors and specs -----------------------------------------------------------

TEST_F(SpmTest, LoadErrorsNameTheFile) {
  TempDir dir;
  expect_error([&] { SpmTokenizer::load(dir.file("none.model")); },
               {dir.file("none.model"), "not found"});
  expect_error([&] { SpmTokenizer::load(dir.path()); }, {dir.path(), "directory"});
  write_file(dir.file("garbage.model"), "this is not a protobuf \xff\xfe\x01");
  expect_error([&] { SpmTokenizer::load(dir.file("garbage.model")); },
               {dir.file("garbage.model"), "not a SentencePiece model: "});
  const std::string real = read_file(model(SPM_MODEL_TYPE_BPE, true));
  write_file(dir.file("truncated.model"), real.substr(0, real.size() / 2));
  expect_error([&] { SpmTokenizer::load(dir.file("truncated.model")); },
               {dir.file("truncated.model"), "not a SentencePiece model: "});
  write_file(dir.file("empty.model"), "");
  expect_error([&] { SpmTokenizer::load(dir.file("empty.model")); },
               {dir.file("empty.model"), "not a SentencePiece model: "});
  // The same through specs.
  expect_error([&] { load_tokenizer("spm:" + dir.file("garbage.model")); },
               {dir.file("garbage.model"), "not a SentencePiece model"});
}

TEST_F(SpmTest, SpecParsing) {
  const std::string m = model(SPM_MODEL_TYPE_UNIGRAM, true);
  const auto tok = load_tokenizer("spm:" + m);
  EXPECT_EQ(tok->name(), "spm:" + m);
  EXPECT_EQ(tok->vocab_size(), 600u);
  EXPECT_NE(dynamic_cast<const SpmTokenizer*>(tok.get()), nullptr);
  expect_error([] { load_tokenizer("xyz:foo"); }, {"xyz:foo", "unknown kind \"xyz\"", "spm:"});
  expect_error([] { load_tokenizer(""); }, {"empty spec"});
  expect_error([] { load_tokenizer("spm:"); }, {"spm:", "empty path"});
  expect_error([] { load_tokenizer("gpt2:"); }, {"gpt2:", "empty path"});
  // A plain path is a GPT-2 directory; a plain file gets a hint.
  expect_error([&] { load_tokenizer(m); }, {m, "is a file", "spm:" + m});
  TempDir dir;
  expect_error([&] { load_tokenizer(dir.path()); }, {dir.file("encoder.json"), "not found"});
  expect_error([&] { load_tokenizer("gpt2:" + dir.path()); }, {dir.file("encoder.json")});
}

TEST(TokenizerSpec, Gpt2StillWorks) {
  const std::string dir = gpt2_dir();
  ASSERT_TRUE(fs::exists(dir + "/encoder.json"))
      << dir
      << "/encoder.json missing: run scripts/get-tokenizer.sh, or set GOSSAMER_TOKENIZER_DIR";
  for (const std::string& spec : {dir, "gpt2:" + dir}) {
    SCOPED_TRACE(spec);
    const auto tok = load_tokenizer(spec);
    EXPECT_EQ(tok->name(), "gpt2:" + dir);
    EXPECT_EQ(tok->vocab_size(), 50257u);
    EXPECT_EQ(tok->document_token(), 50256u);
    EXPECT_EQ(tok->encode("Hello world"), (std::vector<uint32_t>{15496, 995}));
    EXPECT_EQ(tok->decode(std::vector<uint32_t>{15496, 995}), "Hello world");
    EXPECT_EQ(tok->decode_token(995), " world");
    EXPECT_EQ(tok->decode_token(50256), "<|endoftext|>");
    expect_error([&] { tok->decode(std::vector<uint32_t>{50257}); }, {"50257"});
  }
}

// ---- prep with spm ------------------------------------------------------------------------

std::vector<uint32_t> read_shards(const std::vector<std::string>& paths, int want_version) {
  std::vector<uint32_t> all;
  for (const auto& p : paths) {
    ShardReader r(p);
    EXPECT_EQ(r.version(), want_version) << p;
    std::vector<int32_t> buf(r.num_tokens());
    r.read(0, buf);
    all.insert(all.end(), buf.begin(), buf.end());
  }
  return all;
}

TEST_F(SpmTest, PrepTrainsThenEncodesDocuments) {
  TempDir dir;
  write_file(dir.file("a.txt"),
             training_text() + "\nFirst document,\nsecond line.\n\nSecond 中文 document.\n");
  PrepOptions opt;
  opt.train_spm.model_prefix = dir.file("tok/spm");
  opt.train_spm.model_type = SPM_MODEL_TYPE_UNIGRAM;
  opt.train_spm.vocab_size = 500;
  opt.train_spm.byte_fallback = true;
  opt.inputs = {dir.file("a.txt")};
  opt.output_prefix = dir.file("out/train");
  opt.shard_tokens = 5000;
  const PrepStats st = prep_run(opt);
  EXPECT_EQ(st.tokenizer, "spm:" + dir.file("tok/spm.model"));
  EXPECT_EQ(st.shard_version, kShardVersionU16);
  const auto tok = SpmTokenizer::load(dir.file("tok/spm.model"));
  EXPECT_EQ(tok->vocab_size(), 500u);

  // The expected stream: [BOS, encode(document)...] per blank-line separated document.
  std::vector<uint32_t> want;
  std::istringstream in(read_file(dir.file("a.txt")));
  std::string line, doc;
  uint64_t docs = 0;
  auto flush = [&] {
    if (doc.empty()) return;
    want.push_back(1);
    for (uint32_t t : tok->encode(doc)) want.push_back(t);
    doc.clear();
    ++docs;
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      flush();
      continue;
    }
    if (!doc.empty()) doc += '\n';
    doc += line;
  }
  flush();
  EXPECT_EQ(st.documents, docs);
  EXPECT_EQ(st.tokens, want.size());
  EXPECT_GT(st.shards.size(), 1u);
  EXPECT_EQ(read_shards(st.shards, kShardVersionU16), want);

  // Encoding with the saved model gives the same shards.
  PrepOptions again;
  again.tokenizer = "spm:" + dir.file("tok/spm.model");
  again.inputs = opt.inputs;
  again.output_prefix = dir.file("again/train");
  again.shard_tokens = 5000;
  EXPECT_EQ(read_shards(prep_run(again).shards, kShardVersionU16), want);
}

TEST_F(SpmTest, PrepTokenizerErrors) {
  TempDir dir;
  PrepOptions opt;
  opt.inputs = {corpus()};
  opt.output_prefix = dir.file("x");
  expect_error([&] { prep_run(opt); }, {"no tokenizer"});
  opt.tokenizer = "spm:" + model(SPM_MODEL_TYPE_BPE, false);
  opt.train_spm.model_prefix = dir.file("m");
  expect_error([&] { prep_run(opt); }, {"exclude each other"});
  opt.train_spm.model_prefix.clear();
  opt.tokenizer = "spm:" + dir.file("missing.model");
  expect_error([&] { prep_run(opt); }, {dir.file("missing.model"), "not found"});
  opt.tokenizer = "bogus:thing";
  expect_error([&] { prep_run(opt); }, {"bogus:thing", "unknown kind"});
  EXPECT_FALSE(fs::exists(dir.file("x_000000.bin")));
}

// A vocabulary above 65,536 pieces: 70,304 distinct CJK characters (each seen twice, in random
// four-character words) with character_coverage 1 make a BPE model of 70,700 pieces; its ids
// above 65,535 need version-2 (uint32) shards.
TEST_F(SpmTest, LargeVocabularyWritesVersion2Shards) {
  std::vector<uint32_t> cps;
  for (uint32_t c = 0x4E00; c < 0xA000; ++c) cps.push_back(c);
  for (uint32_t c = 0x3400; c < 0x4DC0; ++c) cps.push_back(c);
  for (uint32_t c = 0x20000; c < 0x20000 + 42720; ++c) cps.push_back(c);
  std::vector<uint32_t> seq = cps;
  seq.insert(seq.end(), cps.begin(), cps.end());
  Rng rng(3);
  for (size_t i = seq.size() - 1; i > 0; --i) std::swap(seq[i], seq[rng.next_u64() % (i + 1)]);
  std::string text;
  for (size_t i = 0; i < seq.size(); ++i) {
    text += utf8(seq[i]);
    if (i % 80 == 79)
      text += (i % 800 == 799) ? "\n\n" : "\n";
    else if (i % 4 == 3)
      text += ' ';
  }
  text += '\n';
  TempDir dir;
  write_file(dir.file("cjk.txt"), text);
  PrepOptions opt;
  opt.train_spm.model_prefix = dir.file("cjk");
  opt.train_spm.vocab_size = 70700;
  opt.train_spm.byte_fallback = true;
  opt.train_spm.character_coverage = 1.0;
  opt.inputs = {dir.file("cjk.txt")};
  opt.output_prefix = dir.file("cjk");
  const PrepStats st = prep_run(opt);
  EXPECT_EQ(st.shard_version, kShardVersionU32);
  const auto tok = SpmTokenizer::load(dir.file("cjk.model"));
  EXPECT_EQ(tok->vocab_size(), 70700u);
  const auto tokens = read_shards(st.shards, kShardVersionU32);
  EXPECT_EQ(tokens.size(), st.tokens);
  const uint64_t above =
      std::count_if(tokens.begin(), tokens.end(), [](uint32_t t) { return t > 0xFFFF; });
  EXPECT_GT(above, 1000u);
  // Every token decodes, and the first document round-trips.
  std::vector<uint32_t> first(tokens.begin() + 1,
                              std::find(tokens.begin() + 1, tokens.end(), tok->document_token()));
  const std::string doc1 = text.substr(0, text.find("\n\n"));
  std::string want;
  for (char c : doc1) want += (c == '\n') ? ' ' : c;
  EXPECT_EQ(tok->decode(first), want);
}

// write_shard's automatic version: 1 while every token fits uint16, else 2.
TEST(ShardVersion, AutomaticFromTokens) {
  TempDir dir;
  const std::vector<uint32_t> small = {0, 65535, 7};
  write_shard(dir.file("a.bin"), small);
  EXPECT_EQ(ShardReader(dir.file("a.bin")).version(), kShardVersionU16);
  const std::vector<uint32_t> big = {0, 65536, 70000, 7};
  write_shard(dir.file("b.bin"), big);
  ShardReader r(dir.file("b.bin"));
  EXPECT_EQ(r.version(), kShardVersionU32);
  std::vector<int32_t> back(4);
  r.read(0, back);
  EXPECT_EQ(back, (std::vector<int32_t>{0, 65536, 70000, 7}));
}

}  // namespace
}  // namespace gossamer::data
