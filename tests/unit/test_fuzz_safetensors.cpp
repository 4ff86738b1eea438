// A fuzz loop over io::SafetensorsReader with the checkpoint's verify-on-load path
// (verify_checksums, then every expected tensor read with its exact dtype and shape). Each case
// copies a small valid file (a "mixed" one of several dtypes and shapes, or a tiny GPT-2
// checkpoint written by the checkpoint code), applies seeded mutations to it (bit flips,
// overwritten bytes, truncation, junk appended, a changed header length, edits of the JSON
// header's text and meaning, duplicated and swapped regions, several at once) and opens the
// result. Case i draws everything from std::mt19937_64 seeded with base seed + i, so a failure
// names the case, its seed and its mutations, and safetensors_case() replays it alone;
// GOSSAMER_FUZZ_ROUNDS=N runs N times as many cases. A table of outcomes per mutation kind goes
// to stdout, to show that both the rejecting and the loading paths ran. Also: the regression the
// loop found, and headers nested too deep for a recursive parser.
// Invariant: every case ends in a gossamer::Error or in a load that serves exactly the right
// bytes: every tensor equal to the original (so a changed byte of checksummed tensor data is
// never accepted), every tensor inside the file. Any other exception, a crash or an out-of-bounds
// access (this runs in the sanitizer build too) is a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "run/checkpoint.h"
#include "run/run_config.h"
#include "safetensors_test_util.h"
#include "test_util.h"

namespace {

using namespace gossamer;
using gossamer::testing::Bytes;
using gossamer::testing::TempDir;
using gossamer::testing::fuzz::CrashReport;
using gossamer::testing::fuzz::g_case;
using gossamer::testing::fuzz::get_u64;
using gossamer::testing::fuzz::kMaxFailures;
using gossamer::testing::fuzz::Mutator;
using gossamer::testing::fuzz::OneThread;
using gossamer::testing::fuzz::rounds;
using gossamer::testing::fuzz::set_u64;
using gossamer::testing::fuzz::Table;
using io::DType;

constexpr uint64_t kSafetensorsSeed = 0x5afe7e45'00000000ull;

struct Tensor {
  std::string name;
  DType dtype;
  io::Shape shape;
  Bytes bytes;
};

// A file flavour: the valid bytes and what a correct load must produce. "checkpoint" is loaded by
// run::load_model_weights, any other through load_like_checkpoint.
struct SafetensorsFlavour {
  std::string name;
  Bytes file;
  std::vector<Tensor> tensors;
};

Bytes random_floats(std::mt19937_64& rng, size_t n) {
  std::vector<float> v(n);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (float& x : v) x = d(rng);
  return gossamer::testing::as_bytes(v);
}

// Several dtypes and shapes (a 0-d scalar, an empty tensor), with the checkpoint's checksums.
SafetensorsFlavour mixed_flavour(const TempDir& dir) {
  std::mt19937_64 rng(7);
  SafetensorsFlavour f{"mixed", {}, {}};
  f.tensors.push_back({"embed.weight", DType::DTYPE_F32, {6, 5}, random_floats(rng, 30)});
  Bytes bf16(2 * 24);
  for (auto& b : bf16) b = static_cast<unsigned char>(rng());
  for (size_t i = 1; i < bf16.size(); i += 2) bf16[i] = 0x3f;  // finite values around 1
  f.tensors.push_back({"h.0.attn.weight", DType::DTYPE_BF16, {4, 6}, bf16});
  f.tensors.push_back({"h.0.attn.bias", DType::DTYPE_F32, {6}, random_floats(rng, 6)});
  std::vector<int32_t> ints = {3, -1, 70000, 0, 42, -9, 12};
  f.tensors.push_back({"step_counts", DType::DTYPE_I32, {7}, gossamer::testing::as_bytes(ints)});
  f.tensors.push_back({"scale", DType::DTYPE_F32, {}, random_floats(rng, 1)});
  f.tensors.push_back({"unused", DType::DTYPE_F32, {0, 3}, {}});
  f.tensors.push_back({"mask", DType::DTYPE_U8, {5}, {1, 0, 1, 1, 0}});
  f.tensors.push_back({"ln_f.weight", DType::DTYPE_F32, {8}, random_floats(rng, 8)});
  io::SafetensorsWriter w;
  w.set_metadata("format", "gossamer-model");
  w.set_metadata("format_version", "1");
  w.add_checksums();
  for (const Tensor& t : f.tensors) w.add(t.name, t.dtype, t.shape, t.bytes.data());
  const std::string path = dir.file("mixed.safetensors");
  w.write(path);
  f.file = gossamer::testing::read_bytes(path);
  return f;
}

// What run::load_model_weights does, for any set of tensors: verify every stored checksum,
// read each expected tensor with its exact dtype and shape, and refuse a file holding more.
std::vector<Bytes> load_like_checkpoint(const std::string& path, const std::vector<Tensor>& want) {
  io::SafetensorsReader r(path);
  r.verify_checksums();
  std::vector<Bytes> out;
  for (const Tensor& t : want) {
    GOSSAMER_CHECK(r.contains(t.name), "%s: missing tensor %s", path.c_str(), t.name.c_str());
    Bytes b(t.bytes.size());
    r.read_into(t.name, t.dtype, t.shape, b.data());
    out.push_back(std::move(b));
  }
  GOSSAMER_CHECK(r.size() == want.size(), "%s: holds %zu tensors, expected %zu", path.c_str(),
                 r.size(), want.size());
  return out;
}

// A tiny GPT-2's weights written and loaded by the checkpoint code itself.
struct CheckpointModel {
  run::RunConfig rc;
  std::unique_ptr<model::Model> model;
  std::vector<float> weights;
};

CheckpointModel make_checkpoint_model() {
  CheckpointModel c;
  c.rc.model.n_layer = 1, c.rc.model.n_head = 2, c.rc.model.d_model = 8;
  c.rc.model.vocab_size = 16, c.rc.model.padded_vocab = 16, c.rc.model.max_seq_len = 4;
  c.model = model::make_model(c.rc.model, 1, 4, kernels::cpu_ops());
  c.model->init_weights(5);
  c.weights.assign(c.model->params().begin(), c.model->params().end());
  return c;
}

SafetensorsFlavour checkpoint_flavour(const TempDir& dir, CheckpointModel& c) {
  SafetensorsFlavour f{"checkpoint", {}, {}};
  const std::string path = dir.file("model.safetensors");
  run::write_model_weights(path, c.model->layout(), c.weights, run::to_json(c.rc), 0);
  f.file = gossamer::testing::read_bytes(path);
  for (const model::ParamView& v : c.model->layout().views()) {
    Bytes b(v.numel * sizeof(float));
    std::memcpy(b.data(), c.weights.data() + v.offset, b.size());
    f.tensors.push_back({v.name, DType::DTYPE_F32, v.shape, b});
  }
  return f;
}

// The header text of a file whose length field is in range (without its trailing pad), or false.
bool header_text(const Bytes& b, std::string* text, uint64_t* len) {
  if (b.size() < 8) return false;
  *len = get_u64(b);
  if (*len > b.size() - 8) return false;
  *text = std::string(b.begin() + 8, b.begin() + 8 + ptrdiff_t(*len));
  text->erase(text->find_last_not_of(' ') + 1);
  return true;
}

// The file with its header text replaced by `text`: padded with spaces to the old length when
// no longer (the data stays in place), else the header grows and the data moves. With
// fix_length false the old length field stays, which no longer describes the file.
Bytes with_header(const Bytes& b, uint64_t old_len, std::string text, bool fix_length) {
  if (fix_length && text.size() < old_len) text.resize(old_len, ' ');
  Bytes out(8);
  set_u64(out, fix_length ? text.size() : old_len);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), b.begin() + 8 + ptrdiff_t(old_len), b.end());
  return out;
}

// A token of a header's text: a number, a word (a name, a dtype, a key) or a punctuation mark.
struct HeaderToken {
  size_t pos, len;
  char cls;  // 'n', 'w' or 'p'
};

// The tokens of `text` other than spaces, in order.
std::vector<HeaderToken> header_tokens(const std::string& text) {
  std::vector<HeaderToken> toks;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    size_t j = i + 1;
    char cls = 'p';
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
      cls = 'n';
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      cls = 'w';
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) ||
                                 text[j] == '_' || text[j] == '.'))
        ++j;
    }
    if (c != ' ') toks.push_back({i, j - i, cls});
    i = j;
  }
  return toks;
}

// A header parsed for a semantic edit: the keys of its tensors and of its metadata, and the two
// tensors (maybe the same) an edit works on.
struct SemanticEdit {
  nlohmann::ordered_json h;
  std::vector<std::string> tensors, meta;
  std::string a, other;
};

// Parses `text` into e->h and collects its keys; false when it is not a JSON object with at
// least two tensors.
bool parse_for_edit(const std::string& text, SemanticEdit* e) {
  nlohmann::ordered_json& h = e->h;
  h = nlohmann::ordered_json::parse(text, nullptr, false);
  if (h.is_discarded() || !h.is_object() || h.size() < 2) return false;
  for (auto it = h.begin(); it != h.end(); ++it)
    if (it.key() != "__metadata__" && it.value().is_object()) e->tensors.push_back(it.key());
  if (h.contains("__metadata__") && h["__metadata__"].is_object())
    for (auto it = h["__metadata__"].begin(); it != h["__metadata__"].end(); ++it)
      e->meta.push_back(it.key());
  return e->tensors.size() >= 2;
}

struct SafetensorsMutator : Mutator {
  using Mutator::Mutator;
  const SafetensorsFlavour* flavour = nullptr;

  void header_length(Bytes& b) {
    if (b.size() < 8) return note("length: file too small");
    const uint64_t old = get_u64(b), size = b.size();
    const std::vector<uint64_t> values = {old + 1 + below(16),
                                          old - 1 - below(16),
                                          0,
                                          1,
                                          2,
                                          size - 8,
                                          size - 7,
                                          size,
                                          100'000'000,
                                          100'000'001,
                                          UINT64_MAX,
                                          UINT64_MAX - 7,
                                          uint64_t{1} << 63,
                                          rng()};
    const uint64_t v = pick(values);
    set_u64(b, v);
    note(strprintf("header length %llu -> %llu", (unsigned long long)old, (unsigned long long)v));
  }

  void data_bit_flip(Bytes& b) {
    std::string text;
    uint64_t len = 0;
    if (!header_text(b, &text, &len)) return flip_bit(b, 0, b.size());
    flip_bit(b, 8 + len, b.size());
  }

  // Replaces one token of the header text (a number, a word, a punctuation mark) with a
  // plausible other one.
  void json_text(Bytes& b) {
    std::string text;
    uint64_t len = 0;
    if (!header_text(b, &text, &len) || text.empty()) return overwrite(b);
    const HeaderToken t = pick(header_tokens(text));
    const std::string old = text.substr(t.pos, t.len);
    const std::string rep =
        t.cls == 'n'   ? number_replacement(old)
        : t.cls == 'w' ? word_replacement(old)
                       : pick(std::vector<std::string>{"", "{", "}", "[", "]", ":", ",", "\"",
                                                       "null", "0", old + old, "\\"});
    text.replace(t.pos, t.len, rep);
    const bool fix = coin(0.8);
    note(strprintf("header text '%s' at %zu -> '%s'%s", old.c_str(), t.pos, rep.c_str(),
                   fix ? "" : " (length field left)"));
    b = with_header(b, len, text, fix);
  }
  // What json_text puts in place of the number `old`.
  std::string number_replacement(const std::string& old) {
    const unsigned long long n = std::strtoull(old.c_str(), nullptr, 10);
    return pick(std::vector<std::string>{
        "0", "1", "-1", "7", std::to_string(n + 1), std::to_string(n - 1), std::to_string(n + 4),
        std::to_string(n * 2), old + "0", "1.5", "1e2", "-0", "", "18446744073709551615",
        "18446744073709551616", "9223372036854775807", "9223372036854775808", "4294967296"});
  }
  // What json_text puts in place of the word `old`: a dtype, a key, a tensor name, a typo.
  std::string word_replacement(const std::string& old) {
    static const std::vector<std::string> kWords = {
        "F32",   "BF16", "F16",     "F64",          "I32",          "U32",     "I64",
        "U8",    "BOOL", "F8_E4M3", "f32",          "F31",          "",        "dtype",
        "shape", "null", "true",    "data_offsets", "__metadata__", "checksum"};
    std::vector<std::string> words = kWords;
    words.push_back(old + "x");
    words.push_back(old.substr(0, old.size() - 1));
    for (const Tensor& x : flavour->tensors) words.push_back(x.name);
    std::string changed = old;
    changed[below(changed.size())] = static_cast<char>('a' + below(26));
    words.push_back(changed);
    return pick(words);
  }

  // Inserts whitespace between two JSON tokens (outside strings): still the same header.
  void json_whitespace(Bytes& b) {
    std::string text;
    uint64_t len = 0;
    if (!header_text(b, &text, &len)) return overwrite(b);
    std::vector<size_t> spots;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '"') in_string = !in_string;
      if (!in_string && text[i] != '\0' && std::strchr("{}[]:,", text[i])) spots.push_back(i + 1);
    }
    if (spots.empty()) return overwrite(b);
    const size_t at = pick(spots);
    const std::string ws = pick(std::vector<std::string>{" ", "\n", "\t", "\r\n", "   "});
    text.insert(at, ws);
    note(strprintf("insert %zu whitespace bytes at header offset %zu", ws.size(), at));
    b = with_header(b, len, text, true);
  }

  // Changes the meaning of a header that is still valid JSON: a dtype, a shape, offsets,
  // a name, a metadata entry, the order of entries, an extra entry.
  void json_semantic(Bytes& b) {
    try {
      json_semantic_unchecked(b);
    } catch (const nlohmann::json::exception& e) {  // a header already damaged by another step
      note(std::string("semantic edit impossible (") + e.what() + ")");
      overwrite(b);
    }
  }
  // One edit of the meaning, drawn after the two tensors it may use; the file is overwritten
  // instead when the edit does not apply to this header.
  void json_semantic_unchecked(Bytes& b) {
    using Edit = bool (SafetensorsMutator::*)(SemanticEdit&);
    static constexpr Edit kEdits[] = {
        &SafetensorsMutator::edit_dtype,      &SafetensorsMutator::edit_shape,
        &SafetensorsMutator::shift_offsets,   &SafetensorsMutator::swap_offsets,
        &SafetensorsMutator::rename_tensor,   &SafetensorsMutator::remove_tensor,
        &SafetensorsMutator::remove_metadata, &SafetensorsMutator::copy_metadata,
        &SafetensorsMutator::shuffle_entries, &SafetensorsMutator::add_empty_tensor,
        &SafetensorsMutator::invalidate_entry};
    std::string text;
    uint64_t len = 0;
    if (!header_text(b, &text, &len)) return overwrite(b);
    SemanticEdit e;
    if (!parse_for_edit(text, &e)) return overwrite(b);
    e.a = pick(e.tensors);
    e.other = pick(e.tensors);
    if (!(this->*kEdits[below(std::size(kEdits))])(e)) return overwrite(b);
    b = with_header(b, len, e.h.dump(), true);
  }

  // ---- the semantic edits: each returns false when it does not apply ----

  bool edit_dtype(SemanticEdit& e) {
    const std::string d = pick(std::vector<std::string>{"F32", "I32", "U32", "BF16", "F16", "I16",
                                                        "U16", "F64", "U8", "BOOL"});
    note("dtype of " + e.a + " -> " + d);
    e.h[e.a]["dtype"] = d;
    return true;
  }
  bool edit_shape(SemanticEdit& e) {
    auto& ta = e.h[e.a];
    if (!ta["shape"].is_array()) return false;
    auto s = ta["shape"].get<std::vector<int64_t>>();
    switch (below(4)) {
      case 0:
        std::reverse(s.begin(), s.end());
        break;
      case 1:
        s.insert(s.begin() + ptrdiff_t(below(s.size() + 1)), 1);
        break;
      case 2:
        if (!s.empty()) s.erase(s.begin() + ptrdiff_t(below(s.size())));
        break;
      default:
        if (!s.empty()) {  // wrapping: an earlier step may have left a huge dimension
          int64_t& dim = s[below(s.size())];
          dim = static_cast<int64_t>(static_cast<uint64_t>(dim) * 2);
        }
        break;
    }
    note("shape of " + e.a + " -> " + io::shape_to_string(s));
    ta["shape"] = s;
    return true;
  }
  bool shift_offsets(SemanticEdit& e) {
    auto& ta = e.h[e.a];
    if (!ta["data_offsets"].is_array() || ta["data_offsets"].size() != 2) return false;
    const int64_t d = pick(std::vector<int64_t>{-4, -2, -1, 1, 2, 4});
    const size_t which = below(3);  // begin, end or both
    for (size_t k = 0; k < 2; ++k) {
      if (which != 2 && which != k) continue;
      const int64_t was = ta["data_offsets"][k].get<int64_t>();
      int64_t now = was;
      if (!__builtin_add_overflow(was, d, &now)) ta["data_offsets"][k] = now;
    }
    note(strprintf("data_offsets of %s shifted by %lld (%zu)", e.a.c_str(), (long long)d, which));
    return true;
  }
  bool swap_offsets(SemanticEdit& e) {
    note("data_offsets of " + e.a + " and " + e.other + " swapped");
    std::swap(e.h[e.a]["data_offsets"], e.h[e.other]["data_offsets"]);
    return true;
  }
  bool rename_tensor(SemanticEdit& e) {
    nlohmann::ordered_json v = e.h[e.a];
    const std::string to = coin() ? e.a + "_" : "x" + e.a.substr(1);
    e.h.erase(e.a);
    e.h[to] = v;
    note("tensor " + e.a + " renamed " + to);
    return true;
  }
  bool remove_tensor(SemanticEdit& e) {
    e.h.erase(e.a);
    note("tensor " + e.a + " removed");
    return true;
  }
  bool remove_metadata(SemanticEdit& e) {
    if (e.meta.empty()) return false;
    const std::string k = pick(e.meta);
    e.h["__metadata__"].erase(k);
    note("metadata " + k + " removed");
    return true;
  }
  bool copy_metadata(SemanticEdit& e) {
    if (e.meta.empty()) return false;
    const std::string k = pick(e.meta), k2 = pick(e.meta);
    std::string v = e.h["__metadata__"][k2].get<std::string>();
    if (k == k2 && !v.empty()) v[below(v.size())] ^= 1;
    e.h["__metadata__"][k] = v;
    note("metadata " + k + " set to the value of " + k2 + (k == k2 ? " with a bit flipped" : ""));
    return true;
  }
  bool shuffle_entries(SemanticEdit& e) {
    nlohmann::ordered_json shuffled = nlohmann::ordered_json::object();
    std::vector<std::string> keys;
    for (auto it = e.h.begin(); it != e.h.end(); ++it) keys.push_back(it.key());
    std::shuffle(keys.begin(), keys.end(), rng);
    for (const std::string& k : keys) shuffled[k] = e.h[k];
    e.h = shuffled;
    note("header entries shuffled");
    return true;
  }
  bool add_empty_tensor(SemanticEdit& e) {
    auto& ta = e.h[e.a];
    const uint64_t at = ta["data_offsets"].is_array() && ta["data_offsets"].size() == 2 &&
                                ta["data_offsets"][0].is_number_unsigned()
                            ? ta["data_offsets"][0].get<uint64_t>()
                            : 0;
    e.h["extra"] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {at, at}}};
    note(strprintf("empty tensor 'extra' added at %llu", (unsigned long long)at));
    return true;
  }
  bool invalidate_entry(SemanticEdit& e) {
    const std::string what = pick(std::vector<std::string>{"unknown", "meta_number", "meta_array"});
    if (what == "unknown") {
      e.h[e.a]["note"] = "x";
    } else if (e.h.contains("__metadata__")) {
      e.h["__metadata__"][e.meta.empty() ? "k" : pick(e.meta)] =
          what == "meta_number" ? nlohmann::ordered_json(1) : nlohmann::ordered_json::array();
    }
    note("header entry made invalid: " + what);
    return true;
  }

  void apply(const std::string& kind, Bytes& b) {
    if (kind == "bit_flip")
      flip_bit(b, 0, b.size());
    else if (kind == "data_bit_flip")
      data_bit_flip(b);
    else if (kind == "overwrite")
      overwrite(b);
    else if (kind == "truncate")
      truncate(b);
    else if (kind == "extend")
      extend(b);
    else if (kind == "header_length")
      header_length(b);
    else if (kind == "json_text")
      json_text(b);
    else if (kind == "json_whitespace")
      json_whitespace(b);
    else if (kind == "json_semantic")
      json_semantic(b);
    else if (kind == "copy_region")
      copy_region(b);
    else if (kind == "swap_regions")
      swap_regions(b);
    else if (kind == "header_and_data") {
      data_bit_flip(b);  // first, while the data is where the header says
      apply(pick(std::vector<std::string>{"json_text", "json_semantic", "json_whitespace"}), b);
    } else if (kind == "compound") {
      const size_t n = 2 + below(3);
      for (size_t i = 0; i < n; ++i)
        apply(pick(std::vector<std::string>{
                  "bit_flip", "data_bit_flip", "overwrite", "truncate", "extend", "header_length",
                  "json_text", "json_whitespace", "json_semantic", "copy_region", "swap_regions"}),
              b);
    } else {
      FAIL() << "unknown mutation kind " << kind;
    }
  }
};

const std::vector<std::string> kSafetensorsKinds = {
    "bit_flip",      "data_bit_flip",   "overwrite",       "truncate",      "extend",
    "header_length", "json_text",       "json_whitespace", "json_semantic", "copy_region",
    "swap_regions",  "header_and_data", "compound"};

// Uses every accessor of an open reader, and checks that each tensor lies inside the file.
void exercise_reader(const io::SafetensorsReader& r, const Bytes& file) {
  const uint64_t buffer = 8 + get_u64(file);
  uint64_t pos = 0;
  for (const io::TensorInfo& t : r.tensors()) {
    if (t.begin != pos || t.end < t.begin || buffer + t.end > file.size())
      fail("reader accepted tensor %s at [%llu, %llu) of a %zu-byte file (buffer at %llu)",
           t.name.c_str(), (unsigned long long)t.begin, (unsigned long long)t.end, file.size(),
           (unsigned long long)buffer);
    pos = t.end;
    const auto* p = static_cast<const unsigned char*>(r.data(t.name));
    if (t.nbytes() > 0 && std::memcmp(p, file.data() + buffer + t.begin, t.nbytes()) != 0)
      fail("reader serves tensor %s from somewhere else than its offsets", t.name.c_str());
    (void)r.info(t.name);
    // Conversions may be refused (an integer target for floats, a value out of range): an Error.
    try {
      (void)r.read_as<float>(t.name);
    } catch (const Error&) {
    }
    try {
      (void)r.read_as<double>(t.name, t.shape);
    } catch (const Error&) {
    }
    try {
      (void)r.read_as<int32_t>(t.name);
    } catch (const Error&) {
    }
    try {
      (void)r.read_as<int64_t>(t.name);
    } catch (const Error&) {
    }
  }
  if (buffer + pos != file.size()) fail("reader accepted a file with trailing bytes");
  for (const auto& [k, v] : r.metadata()) (void)r.metadata(k);
  bool threw = false;
  try {
    (void)r.info("no such tensor");
  } catch (const Error&) {
    threw = true;
  }
  if (!threw) fail("info() of a missing tensor did not throw");
}

// Writes `file`, opens and loads it; returns the outcome's column, or "FAIL: why".
std::string run_safetensors_case(const SafetensorsFlavour& f, CheckpointModel& ckpt,
                                 const std::string& path, const Bytes& file) {
  // A new file, not the old one truncated: ext4 flushes a file rewritten through truncation on
  // close, which would make the loop wait for the disk.
  std::filesystem::remove(path);
  gossamer::testing::write_bytes(path, file);
  try {
    io::SafetensorsReader r(path);
    try {
      exercise_reader(r, file);
    } catch (const Error& e) {
      return std::string("FAIL: ") + e.what();
    }
    size_t checked = 0;
    try {
      checked = r.verify_checksums();
    } catch (const Error&) {
      return "checksum";
    }
    std::vector<Bytes> got;
    try {
      if (f.name == "checkpoint") {
        std::fill(ckpt.model->params().begin(), ckpt.model->params().end(), 0.0f);
        run::load_model_weights(std::filesystem::path(path).parent_path().string(), *ckpt.model);
        for (const model::ParamView& v : ckpt.model->layout().views()) {
          Bytes b(v.numel * sizeof(float));
          std::memcpy(b.data(), ckpt.model->params().data() + v.offset, b.size());
          got.push_back(std::move(b));
        }
      } else {
        got = load_like_checkpoint(path, f.tensors);
      }
    } catch (const Error&) {
      return "load";
    }
    for (size_t i = 0; i < f.tensors.size(); ++i)
      if (got[i] != f.tensors[i].bytes)
        return "FAIL: loaded tensor " + f.tensors[i].name + " differs from the original (" +
               std::to_string(checked) + " checksums verified)";
    return checked == f.tensors.size() ? "intact" : "intact_unsummed";
  } catch (const Error&) {
    return "open";
  } catch (const std::exception& e) {
    return std::string("FAIL: threw a non-gossamer exception: ") + e.what();
  }
}

// One case: mutate flavour f with `kind` from `seed`; returns the outcome column (or FAIL: ...).
std::string safetensors_case(const SafetensorsFlavour& f, CheckpointModel& ckpt,
                             const std::string& path, const std::string& kind, uint64_t seed,
                             std::string* log) {
  SafetensorsMutator m(seed);
  m.flavour = &f;
  Bytes b = f.file;
  m.apply(kind, b);
  *log = m.log;
  std::snprintf(g_case, sizeof g_case, "safetensors %s, kind %s, seed 0x%016llx: %s",
                f.name.c_str(), kind.c_str(), (unsigned long long)seed, m.log.c_str());
  const std::string outcome = run_safetensors_case(f, ckpt, path, b);
  if (b == f.file && outcome != "intact") return "FAIL: the valid file did not load: " + outcome;
  return b == f.file ? "unchanged" : outcome;
}

TEST(FuzzReaders, SafetensorsNeverCrashAndNeverAcceptDamagedTensors) {
  CrashReport report;
  OneThread one_thread;
  TempDir dir;
  CheckpointModel ckpt = make_checkpoint_model();
  const std::vector<SafetensorsFlavour> flavours = {mixed_flavour(dir),
                                                    checkpoint_flavour(dir, ckpt)};
  std::filesystem::create_directories(dir.file("case"));
  const std::string path = dir.file("case/model.safetensors");
  for (const SafetensorsFlavour& f : flavours)  // the unmutated files load
    ASSERT_EQ(run_safetensors_case(f, ckpt, path, f.file), "intact") << f.name;
  const int cases = 3000 * rounds();
  Table table;
  table.columns = {"unchanged", "open", "checksum", "load", "intact", "intact_unsummed"};
  int failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < cases; ++i) {
    const std::string& kind = kSafetensorsKinds[size_t(i) % kSafetensorsKinds.size()];
    const SafetensorsFlavour& f = flavours[size_t(i / kSafetensorsKinds.size()) % flavours.size()];
    const uint64_t seed = kSafetensorsSeed + uint64_t(i);
    std::string log;
    const std::string outcome = safetensors_case(f, ckpt, path, kind, seed, &log);
    if (outcome.starts_with("FAIL")) {
      if (++failures <= kMaxFailures)
        ADD_FAILURE() << "case " << i << " (" << f.name << ", kind " << kind << ", seed 0x"
                      << std::hex << seed << std::dec << "): " << outcome
                      << "\n  mutations: " << log;
      table.add(kind, "FAIL");
      continue;
    }
    table.add(kind, outcome);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failures) table.columns.push_back("FAIL");
  table.print(
      strprintf("safetensors fuzz: %d cases (flavours mixed, checkpoint), base seed "
                "0x%016llx, %.2f s",
                cases, (unsigned long long)kSafetensorsSeed, secs));
  std::printf(
      "  open/checksum/load: refused with gossamer::Error at open, by verify_checksums, or by the "
      "checkpoint load (names, dtypes, shapes); intact: loaded, equal to the original; "
      "intact_unsummed: the same, with fewer tensors under a checksum\n");
  EXPECT_EQ(failures, 0);
}

// Found by the loop above (case 1533): a data region overwritten, then the header's checksum
// entry of the damaged tensor removed, loaded the damaged tensor. verify_checksums now refuses a
// tensor without a checksum in a file that holds checksums.
TEST(FuzzReaders, RegressionDamagedTensorWhoseChecksumEntryIsGone) {
  TempDir dir;
  CheckpointModel ckpt = make_checkpoint_model();
  const SafetensorsFlavour f = checkpoint_flavour(dir, ckpt);
  std::filesystem::create_directories(dir.file("case"));
  std::string log;
  EXPECT_EQ(safetensors_case(f, ckpt, dir.file("case/model.safetensors"), "compound",
                             0x5afe7e45000005fdull, &log),
            "checksum")
      << log;
  EXPECT_NE(log.find("metadata checksum.blocks.0.mlp.fc.weight removed"), std::string::npos) << log;
}

// Headers no mutation above produces: nesting 200,000 levels deep, where a recursive parser or
// destructor would run out of stack instead of failing cleanly.
TEST(FuzzReaders, DeeplyNestedHeadersAreErrors) {
  TempDir dir;
  const std::string path = dir.file("deep.safetensors");
  for (const std::string& open : {std::string("["), std::string("{\"a\":")}) {
    const size_t depth = 200'000;  // beyond an 8 MiB stack for any recursive descent
    std::string h;
    for (size_t i = 0; i < depth; ++i) h += open;
    h += open == "[" ? "0" : "{}";
    for (size_t i = 0; i < depth; ++i) h += open == "[" ? "]" : "}";
    gossamer::testing::write_bytes(path, gossamer::testing::build_file(h, {}));
    EXPECT_THROW(io::SafetensorsReader r(path), Error) << open;
    h.resize(h.size() - depth / 2);  // unbalanced
    gossamer::testing::write_bytes(path, gossamer::testing::build_file(h, {}));
    EXPECT_THROW(io::SafetensorsReader r(path), Error) << open;
  }
}

}  // namespace
