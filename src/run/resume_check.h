// What may change when a run is resumed. A resumed run reproduces the uninterrupted one bit for
// bit only if its definition is the checkpoint's: the model, the data and its order (shards,
// sequence length, shuffling, seed, the global batch), the optimizer and the schedule. Those
// keys may differ only when the user lists them in --allow-change (then each is logged as a
// warning); every other key (the run's length, evaluation, logging, checkpoints, samples,
// threads, sharding and communication, the per-rank micro-batch at another world size) may
// change and is logged.
// A key the checkpoint predates compares as the behaviour it ran with where its section records
// it (resume_keys), so changing a default later cannot slip through. Each section says both
// things of its own keys (a static resume_keys(), e.g. optim/scape_config.h).
// Invariant: a resume with an unlisted change of definition is an error naming the key and both
// values, before the run directory is touched.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gossamer::run {

struct ResumeKeys {
  std::map<std::string, nlohmann::json> before;  // dotted key -> what older checkpoints ran with
  std::vector<std::string> harmless;             // dotted keys
  std::vector<std::string> harmless_sections;    // "kernels.", ...
};

// What the run config's sections declare (run_config.cpp); every key named is a config key
// (checked when first built: an error names the section's key).
const ResumeKeys& resume_keys();

// Whether a change of this config key leaves the run the same run (see above).
bool change_is_harmless_on_resume(const std::string& key);

// The value of dotted `key` in a saved (resolved) config; for a key the config predates, the
// value it ran with where that is recorded; null when neither (compare as "anything").
nlohmann::json saved_value(const nlohmann::json& saved, const std::string& key);

// Compares the config stored in the checkpoint with this run's resolved config (leaf by leaf,
// over every key the config knows) and the checkpoint's global batch (tokens per step, 0 when
// unknown) with this run's. Logs the allowed changes; throws gossamer::Error naming the first
// change of definition not in `allowed` (and an `allowed` entry that is not a config key).
void check_resume_changes(const nlohmann::json& saved, const nlohmann::json& now,
                          int64_t saved_tokens_per_step, int64_t tokens_per_step,
                          const std::vector<std::string>& allowed);

}  // namespace gossamer::run
