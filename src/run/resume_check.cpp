// check_resume_changes (see resume_check.h): a leaf-by-leaf comparison of two resolved configs.
#include "run/resume_check.h"

#include <algorithm>
#include <string_view>

#include "core/error.h"
#include "core/log.h"
#include "io/json_path.h"
#include "run/run_config.h"

namespace gossamer::run {

namespace {

using nlohmann::json;

// The value of a dotted key ("optimizer.scape.sparsity"), null when absent.
json value_at(const json& config, const std::string& key) {
  const json* v = io::find_dotted(config, key);
  return v ? *v : json(nullptr);
}

}  // namespace

json saved_value(const json& saved, const std::string& key) {
  json v = value_at(saved, key);
  if (!v.is_null()) return v;
  const auto& before = resume_keys().before;
  auto it = before.find(key);
  return it == before.end() ? json(nullptr) : it->second;
}

bool change_is_harmless_on_resume(const std::string& key) {
  const ResumeKeys& r = resume_keys();
  for (const std::string& section : r.harmless_sections)
    if (key.starts_with(section)) return true;
  return std::find(r.harmless.begin(), r.harmless.end(), key) != r.harmless.end();
}

void check_resume_changes(const json& saved, const json& now, int64_t saved_tokens_per_step,
                          int64_t tokens_per_step, const std::vector<std::string>& allowed) {
  const std::vector<std::string> keys = config_key_paths();
  for (const std::string& a : allowed)
    GOSSAMER_CHECK(std::find(keys.begin(), keys.end(), a) != keys.end() || a == "global_batch",
                   "--allow-change %s: not a config key (nor global_batch)", a.c_str());
  auto is_allowed = [&](const std::string& key) {
    return std::find(allowed.begin(), allowed.end(), key) != allowed.end();
  };
  // A checkpoint's optimizer state is its method's (run/optimizer_state_file.h): no
  // --allow-change makes another method continue from it.
  const json saved_method = value_at(saved, "optimizer.name");
  const json method = value_at(now, "optimizer.name");
  GOSSAMER_CHECK(saved_method.is_null() || saved_method == method,
                 "--resume: optimizer.name is %s in the checkpoint and %s now; a checkpoint's "
                 "optimizer state continues only the method that wrote it, whatever "
                 "--allow-change says: to train its weights with %s, start a new run from them "
                 "with --init-from CHECKPOINT (fresh optimizer state, step 0)",
                 saved_method.dump().c_str(), method.dump().c_str(), method.dump().c_str());
  for (const std::string& key : keys) {
    const json after = value_at(now, key);
    const json before = after.is_null() ? value_at(saved, key) : saved_value(saved, key);
    if (before == after || before.is_null()) continue;  // null: a key the checkpoint predates
    const std::string was = before.dump(), is = after.dump();
    if (change_is_harmless_on_resume(key)) {
      log_info("resume: %s changed from %s to %s", key.c_str(), was.c_str(), is.c_str());
      continue;
    }
    GOSSAMER_CHECK(is_allowed(key),
                   "--resume: %s is %s in the checkpoint and %s now; it changes the model, the "
                   "data or its order, or the optimizer, so the run would not continue as it "
                   "was (allow it with --allow-change %s)",
                   key.c_str(), was.c_str(), is.c_str(), key.c_str());
    log_warn(
        "resume: %s changed from %s to %s (--allow-change): the run does not continue as "
        "it was",
        key.c_str(), was.c_str(), is.c_str());
  }
  if (saved_tokens_per_step > 0 && saved_tokens_per_step != tokens_per_step) {
    GOSSAMER_CHECK(is_allowed("global_batch"),
                   "--resume: the global batch is %lld tokens per step in the checkpoint and %lld "
                   "now (data.micro_batch x data.seq_len x ranks x accumulation); the data order "
                   "would change (allow it with --allow-change global_batch)",
                   (long long)saved_tokens_per_step, (long long)tokens_per_step);
    log_warn(
        "resume: the global batch changed from %lld to %lld tokens per step "
        "(--allow-change)",
        (long long)saved_tokens_per_step, (long long)tokens_per_step);
  }
}

}  // namespace gossamer::run
