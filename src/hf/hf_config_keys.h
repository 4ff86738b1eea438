// HfConfigKeys: typed access to the keys of a Hugging Face config.json with HF's default for an
// absent (or, where HF allows it, null) key, for the per-family readers (hf_gpt2.cpp,
// hf_llama.cpp). Internal to src/hf.
// Invariant: every rejection names the file and the key.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace gossamer::hf {

class HfConfigKeys {
 public:
  HfConfigKeys(const nlohmann::json& j, const std::string& file) : j_(j), file_(file) {}

  const nlohmann::json* find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  int integer(const char* key, int64_t dflt, int64_t min = 1) const {
    const nlohmann::json* v = find(key);
    if (!v) return int(dflt);
    GOSSAMER_CHECK(v->is_number_integer(), "%s: \"%s\" must be an integer, found %s", file_.c_str(),
                   key, v->dump().c_str());
    const int64_t x = v->get<int64_t>();
    GOSSAMER_CHECK(x >= min && x <= (int64_t(1) << 30), "%s: \"%s\" is %lld, expected >= %lld",
                   file_.c_str(), key, (long long)x, (long long)min);
    return int(x);
  }
  double number(const char* key, double dflt) const {
    const nlohmann::json* v = find(key);
    if (!v) return dflt;
    GOSSAMER_CHECK(v->is_number(), "%s: \"%s\" must be a number, found %s", file_.c_str(), key,
                   v->dump().c_str());
    return v->get<double>();
  }
  bool boolean(const char* key, bool dflt) const {
    const nlohmann::json* v = find(key);
    if (!v) return dflt;
    GOSSAMER_CHECK(v->is_boolean(), "%s: \"%s\" must be true or false, found %s", file_.c_str(),
                   key, v->dump().c_str());
    return v->get<bool>();
  }
  std::string string(const char* key, const char* dflt) const {
    const nlohmann::json* v = find(key);
    if (!v) return dflt;
    GOSSAMER_CHECK(v->is_string(), "%s: \"%s\" must be a string, found %s", file_.c_str(), key,
                   v->dump().c_str());
    return v->get<std::string>();
  }
  // Fails unless the key is absent/null or equal to `want`.
  template <class T>
  void require(const char* key, const T& want, const char* why) const {
    const nlohmann::json* v = find(key);
    if (!v) return;
    bool ok = false;
    try {
      ok = v->get<T>() == want;
    } catch (const nlohmann::json::exception&) {
    }
    GOSSAMER_CHECK(ok, "%s: \"%s\" is %s; %s", file_.c_str(), key, v->dump().c_str(), why);
  }
  const std::string& file() const { return file_; }

 private:
  const nlohmann::json& j_;
  const std::string& file_;
};

}  // namespace gossamer::hf
