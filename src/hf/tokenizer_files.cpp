// Implementation of the tokenizer-file mapping (see tokenizer_files.h).
#include "hf/tokenizer_files.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/sha256.h"
#include "data/gpt2_tokenizer.h"
#include "data/spm_tokenizer.h"
#include "io/json_file.h"

namespace gossamer::hf {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// GPT-2's files under HF's names must be GPT-2's own (the only BPE files our tokenizer loads).
void check_gpt2_file(const std::string& path, const char* want_sha, const char* ours) {
  const std::string got = sha256_file_hex(path);
  GOSSAMER_CHECK(got == want_sha,
                 "%s: not GPT-2's %s (sha256 %s, expected %s); gossamer's BPE tokenizer loads "
                 "GPT-2's own files only",
                 path.c_str(), ours, got.c_str(), want_sha);
}

// Loads GPT-2's files from an HF directory through a temporary directory of symlinks named
// as our tokenizer expects.
std::unique_ptr<data::Tokenizer> load_gpt2_from(const HfTokenizerSource& src) {
  std::string tmpl = (fs::temp_directory_path() / "gossamer-hf-tok.XXXXXX").string();
  GOSSAMER_CHECK(::mkdtemp(tmpl.data()) != nullptr, "cannot create a temporary directory in %s",
                 fs::temp_directory_path().c_str());
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{tmpl};
  std::error_code ec1, ec2;
  fs::create_symlink(fs::absolute(src.vocab_json),
                     fs::path(tmpl) / data::Gpt2Tokenizer::kEncoderFile, ec1);
  fs::create_symlink(fs::absolute(src.merges_txt), fs::path(tmpl) / data::Gpt2Tokenizer::kVocabFile,
                     ec2);
  GOSSAMER_CHECK(!ec1 && !ec2, "cannot link the tokenizer files into %s: %s", tmpl.c_str(),
                 (ec1 ? ec1 : ec2).message().c_str());
  return data::load_tokenizer("gpt2:" + tmpl);
}

}  // namespace

HfTokenizerFiles open_tokenizer_for_export(const std::string& spec, int model_vocab_size) {
  HfTokenizerFiles f;
  f.tokenizer = data::load_tokenizer(spec);
  const std::string name = f.tokenizer->name();
  const size_t colon = name.find(':');
  GOSSAMER_CHECK(colon != std::string::npos, "tokenizer \"%s\": unexpected name \"%s\"",
                 spec.c_str(), name.c_str());
  f.kind = name.substr(0, colon);
  f.path = name.substr(colon + 1);
  GOSSAMER_CHECK(f.kind == "gpt2" || f.kind == "spm",
                 "tokenizer \"%s\": kind \"%s\" has no Hugging Face export", spec.c_str(),
                 f.kind.c_str());
  GOSSAMER_CHECK(f.tokenizer->vocab_size() <= uint32_t(model_vocab_size),
                 "tokenizer \"%s\" has %u tokens, more than the model's vocab_size %d (use "
                 "--tokenizer to name the right one, or --no-tokenizer)",
                 spec.c_str(), f.tokenizer->vocab_size(), model_vocab_size);
  return f;
}

HfSpecialTokens write_hf_tokenizer(const HfTokenizerFiles& f, int model_max_length,
                                   const io::StagingDir& out) {
  HfSpecialTokens ids;
  ordered_json tc;
  if (f.kind == "gpt2") {
    const fs::path dir(f.path);
    out.copy_file((dir / data::Gpt2Tokenizer::kEncoderFile).string(), "vocab.json");
    out.copy_file((dir / data::Gpt2Tokenizer::kVocabFile).string(), "merges.txt");
    const char* eot = "<|endoftext|>";
    tc["tokenizer_class"] = "GPT2Tokenizer";
    tc["bos_token"] = eot;
    tc["eos_token"] = eot;
    tc["unk_token"] = eot;
    tc["add_bos_token"] = false;
    tc["add_prefix_space"] = false;
    tc["errors"] = "replace";
    ids.bos = ids.eos = f.tokenizer->document_token();
  } else {
    const auto* spm = dynamic_cast<const data::SpmTokenizer*>(f.tokenizer.get());
    GOSSAMER_CHECK(spm != nullptr, "tokenizer %s: not a SentencePiece tokenizer", f.path.c_str());
    out.copy_file(f.path, "tokenizer.model");
    auto piece = [&](int id) -> ordered_json {
      return id >= 0 ? ordered_json(spm->piece(uint32_t(id))) : ordered_json(nullptr);
    };
    tc["tokenizer_class"] = "LlamaTokenizer";
    tc["bos_token"] = piece(spm->bos_id());
    tc["eos_token"] = piece(spm->eos_id());
    tc["unk_token"] = piece(spm->unk_id());
    tc["pad_token"] = nullptr;
    tc["add_bos_token"] = spm->bos_id() >= 0;
    tc["add_eos_token"] = false;
    tc["legacy"] = true;  // plain SentencePiece encoding, as SpmTokenizer::encode
    tc["sp_model_kwargs"] = ordered_json::object();
    tc["spaces_between_special_tokens"] = false;
    if (spm->bos_id() >= 0) ids.bos = spm->bos_id();
    if (spm->eos_id() >= 0) ids.eos = spm->eos_id();
  }
  tc["clean_up_tokenization_spaces"] = false;
  tc["model_max_length"] = model_max_length;
  out.write_file("tokenizer_config.json", tc.dump(2) + "\n");
  return ids;
}

HfTokenizerSource find_hf_tokenizer(const std::string& hf_dir) {
  const fs::path dir(hf_dir);
  const fs::path config = dir / "tokenizer_config.json", model = dir / "tokenizer.model",
                 vocab = dir / "vocab.json", merges = dir / "merges.txt";
  std::string cls;
  if (file_exists(config)) {
    const nlohmann::json j = io::read_json_object(config.string(), "tokenizer config");
    auto it = j.find("tokenizer_class");
    if (it != j.end() && it->is_string()) cls = it->get<std::string>();
  }
  const bool wants_spm = cls.starts_with("LlamaTokenizer");
  const bool wants_bpe = cls.starts_with("GPT2Tokenizer");
  HfTokenizerSource src;
  if (file_exists(model) && !wants_bpe) {
    data::SpmTokenizer::load(model.string());  // validates (errors name the file)
    src.kind = "spm";
    src.model_file = model.string();
    return src;
  }
  if (file_exists(vocab) || file_exists(merges)) {
    GOSSAMER_CHECK(file_exists(vocab), "%s: missing (%s exists; GPT-2 BPE needs both)",
                   vocab.c_str(), merges.c_str());
    GOSSAMER_CHECK(file_exists(merges), "%s: missing (%s exists; GPT-2 BPE needs both)",
                   merges.c_str(), vocab.c_str());
    check_gpt2_file(vocab.string(), data::Gpt2Tokenizer::kEncoderSha256, "encoder.json");
    check_gpt2_file(merges.string(), data::Gpt2Tokenizer::kVocabSha256, "vocab.bpe");
    src.kind = "gpt2";
    src.vocab_json = vocab.string();
    src.merges_txt = merges.string();
    return src;
  }
  GOSSAMER_CHECK(!wants_spm, "%s: missing (%s names %s)", model.c_str(), config.c_str(),
                 cls.c_str());
  GOSSAMER_CHECK(!wants_bpe, "%s: missing (%s names %s)", vocab.c_str(), config.c_str(),
                 cls.c_str());
  if (!cls.empty())
    log_warn("%s: tokenizer_class %s is not one gossamer loads (GPT2Tokenizer, LlamaTokenizer)",
             config.c_str(), cls.c_str());
  return src;
}

std::string import_hf_tokenizer(const HfTokenizerSource& src, const io::StagingDir& out,
                                const std::string& subdir) {
  const fs::path final_dir = fs::absolute(out.final_path()) / subdir;
  if (src.kind == "gpt2") {
    out.copy_file(src.vocab_json, subdir + "/" + data::Gpt2Tokenizer::kEncoderFile);
    out.copy_file(src.merges_txt, subdir + "/" + data::Gpt2Tokenizer::kVocabFile);
    data::load_tokenizer("gpt2:" + (fs::path(out.path()) / subdir).string());  // the copy
    return "gpt2:" + final_dir.string();
  }
  if (src.kind == "spm") {
    out.copy_file(src.model_file, subdir + "/tokenizer.model");
    data::load_tokenizer("spm:" + (fs::path(out.path()) / subdir / "tokenizer.model").string());
    return "spm:" + (final_dir / "tokenizer.model").string();
  }
  return "";
}

std::unique_ptr<data::Tokenizer> load_hf_tokenizer(const std::string& hf_dir) {
  const HfTokenizerSource src = find_hf_tokenizer(hf_dir);
  if (src.kind == "spm") return data::load_tokenizer("spm:" + src.model_file);
  if (src.kind == "gpt2") return load_gpt2_from(src);
  fail(
      "%s: holds no tokenizer gossamer loads (tokenizer.model, or vocab.json + merges.txt); "
      "pass --tokenizer",
      hf_dir.c_str());
}

}  // namespace gossamer::hf
