// Implementation of checkpoint save/load (see checkpoint.h for the directory layout).
#include "train/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "comm/single_communicator.h"
#include "core/error.h"
#include "core/log.h"
#include "io/atomic_file.h"
#include "io/safetensors.h"
#include "io/staging_dir.h"
#include "model/host_params.h"
#include "train/optimizer_state_file.h"
#include "train/run_config.h"

namespace gossamer::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

// Complete checkpoints of a run directory, sorted by step.
std::vector<std::pair<int64_t, fs::path>> list_checkpoints(const fs::path& run_dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  const fs::path dir = run_dir / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string digits = name.starts_with("step_") ? name.substr(5) : "";
    const bool numbered = digits.size() >= 8 && digits.size() <= 18 &&
                          digits.find_first_not_of("0123456789") == std::string::npos;
    if (entry.is_directory() && numbered && fs::exists(entry.path() / "trainer.json"))
      out.emplace_back(std::stoll(digits), entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  GOSSAMER_CHECK(in.good(), "%s: cannot open", path.c_str());
  json j = json::parse(in, nullptr, false);
  GOSSAMER_CHECK(!j.is_discarded() && j.is_object(), "%s: not a valid JSON object", path.c_str());
  return j;
}

template <class T>
T json_field(const json& j, const char* key, const fs::path& file) {
  GOSSAMER_CHECK(j.contains(key), "%s: missing key \"%s\"", file.c_str(), key);
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    fail("%s: key \"%s\" has the wrong type", file.c_str(), key);
  }
}
}  // namespace

TrainerState initial_trainer_state(uint64_t seed) {
  TrainerState state;
  state.sample_rng = Rng(seed, /*stream=*/0x73616d70).state();
  return state;
}

void write_model_weights(const std::string& path, const model::ParamLayout& layout,
                         std::span<const float> params, const json& config) {
  GOSSAMER_CHECK(params.size() == layout.total(), "%s: %zu weights for a layout of %zu",
                 path.c_str(), params.size(), layout.total());
  io::SafetensorsWriter weights;
  weights.set_metadata("format", "gossamer-model");
  weights.set_metadata("format_version", std::to_string(kCheckpointFormatVersion));
  weights.set_metadata("model_config", config.at("model").dump());
  weights.add_checksums();
  for (const model::ParamView& v : layout.views())
    weights.add(v.name, io::DType::DTYPE_F32, v.shape, params.data() + v.offset);
  weights.write(path);
}

json trainer_state_json(const TrainerState& state, const json& config) {
  json rng = json::array();
  for (uint64_t w : state.sample_rng) rng.push_back(std::to_string(w));
  return {{"format_version", kCheckpointFormatVersion},
          {"step", state.step},
          {"tokens_seen", state.tokens_seen},
          {"loader", {{"epoch", state.loader.epoch}, {"cursor", state.loader.cursor}}},
          {"sample_rng", rng},
          {"config", config}};
}

std::string save_checkpoint(const std::string& run_dir, const model::ParamLayout& layout,
                            std::span<const float> weights, optim::Optimizer& optimizer,
                            const TrainerState& state, const json& config,
                            comm::Communicator& comm) {
  const GatheredOptimizerState optimizer_state(optimizer, comm);
  if (comm.rank() != 0) return "";

  const fs::path dir = fs::path(run_dir) / "checkpoints";
  std::error_code ec;
  const bool created = fs::create_directories(dir, ec);
  GOSSAMER_CHECK(!ec, "%s: cannot create checkpoint directory: %s", dir.c_str(),
                 ec.message().c_str());
  if (created) io::fsync_directory(run_dir);
  // A directory step_N is complete whenever it exists: files are written into a staging
  // directory, each fsynced, and the directory is renamed into place and the parent synced.
  io::StagingDir staging((dir / step_name(state.step)).string(), /*force=*/true, "trainer.json",
                         "checkpoint");
  const fs::path tmp_dir = staging.path();
  write_model_weights((tmp_dir / "model.safetensors").string(), layout, weights, config);
  optimizer_state.write((tmp_dir / "optimizer.safetensors").string());

  staging.write_file("trainer.json", trainer_state_json(state, config).dump(2) + "\n");
  staging.commit();
  return staging.final_path();
}

std::string save_checkpoint(const std::string& run_dir, const model::Model& model,
                            optim::Optimizer& optimizer, const TrainerState& state,
                            const json& config) {
  const auto single = comm::make_single_communicator();
  const model::HostParamsView weights(model);  // read back from device memory
  return save_checkpoint(run_dir, model.layout(), weights.span(), optimizer, state, config,
                         *single);
}

void prune_checkpoints(const std::string& run_dir, int64_t keep) {
  if (keep <= 0) return;
  auto all = list_checkpoints(run_dir);
  for (size_t i = 0; i + size_t(keep) < all.size(); ++i) {
    // Renamed to a writer's temporary name first (atomic): a kill in the middle of the deletion
    // leaves ".step_N.tmp-PID", which the next start removes as a dead writer's leftover, not a
    // checkpoint without trainer.json that no later prune would list.
    const fs::path& dir = all[i].second;
    const fs::path doomed =
        dir.parent_path() / strprintf(".%s.tmp-%d", dir.filename().c_str(), int(::getpid()));
    std::error_code ec;
    fs::rename(dir, doomed, ec);
    if (!ec) fs::remove_all(doomed, ec);
    if (ec)
      log_warn("could not delete old checkpoint %s: %s", all[i].second.c_str(),
               ec.message().c_str());
  }
}

std::string resolve_checkpoint(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  GOSSAMER_CHECK(fs::exists(p, ec), "%s: no such checkpoint or run directory", path.c_str());
  if (fs::exists(p / "trainer.json")) return p.string();
  auto all = list_checkpoints(p);
  GOSSAMER_CHECK(!all.empty(),
                 "%s: not a checkpoint (no trainer.json) and holds no complete checkpoint under "
                 "checkpoints/",
                 path.c_str());
  return all.back().second.string();
}

void load_model_weights(const std::string& checkpoint_dir, model::Model& model) {
  const std::string file = (fs::path(checkpoint_dir) / "model.safetensors").string();
  io::SafetensorsReader reader(file);
  reader.verify_checksums();  // a damaged file is an error, never weights
  model::HostParamsEdit host(model, /*read_first=*/true);
  float* p = host.span().data();
  for (const model::ParamView& v : model.layout().views()) {
    GOSSAMER_CHECK(reader.contains(v.name),
                   "%s: missing tensor %s (the checkpoint is of another model shape?)",
                   file.c_str(), v.name.c_str());
    reader.read_into(v.name, io::DType::DTYPE_F32, v.shape, p + v.offset);
    for (size_t i = 0; i < v.numel; ++i)
      GOSSAMER_CHECK(std::isfinite(p[v.offset + i]),
                     "%s: tensor %s holds a non-finite value (%g at element %zu); refusing to use "
                     "these weights",
                     file.c_str(), v.name.c_str(), double(p[v.offset + i]), i);
  }
  GOSSAMER_CHECK(reader.size() == model.layout().views().size(),
                 "%s: holds %zu tensors, the model has %zu parameters (another model shape?)",
                 file.c_str(), reader.size(), model.layout().views().size());
  host.commit();
}

namespace {

uint64_t parse_u64(const json& v, const char* what, const fs::path& file) {
  GOSSAMER_CHECK(v.is_string(), "%s: %s must be a string of digits", file.c_str(), what);
  const std::string text = v.get<std::string>();
  GOSSAMER_CHECK(!text.empty() && text.size() <= 20 &&
                     text.find_first_not_of("0123456789") == std::string::npos,
                 "%s: %s must be a string of digits, found \"%s\"", file.c_str(), what,
                 text.c_str());
  errno = 0;
  const unsigned long long x = std::strtoull(text.c_str(), nullptr, 10);
  GOSSAMER_CHECK(errno == 0, "%s: %s = %s does not fit 64 bits", file.c_str(), what, text.c_str());
  return x;
}

}  // namespace

// trainer.json, every field checked (a damaged or hand-edited file is an error naming it).
TrainerState read_trainer_state(const fs::path& tfile) {
  json t = read_json_file(tfile);
  GOSSAMER_CHECK(json_field<int>(t, "format_version", tfile) == kCheckpointFormatVersion,
                 "%s: unsupported format_version (expected %d)", tfile.c_str(),
                 kCheckpointFormatVersion);
  TrainerState state;
  state.step = json_field<int64_t>(t, "step", tfile);
  state.tokens_seen = json_field<int64_t>(t, "tokens_seen", tfile);
  GOSSAMER_CHECK(state.step >= 0, "%s: step must be >= 0, found %lld", tfile.c_str(),
                 (long long)state.step);
  GOSSAMER_CHECK(state.tokens_seen >= 0, "%s: tokens_seen must be >= 0, found %lld", tfile.c_str(),
                 (long long)state.tokens_seen);
  json loader = json_field<json>(t, "loader", tfile);
  state.loader.epoch = json_field<uint64_t>(loader, "epoch", tfile);
  state.loader.cursor = json_field<uint64_t>(loader, "cursor", tfile);
  json rng = json_field<json>(t, "sample_rng", tfile);
  GOSSAMER_CHECK(rng.is_array() && rng.size() == 4, "%s: sample_rng must hold 4 words",
                 tfile.c_str());
  for (size_t i = 0; i < 4; ++i) state.sample_rng[i] = parse_u64(rng[i], "sample_rng", tfile);
  return state;
}

TrainerState read_checkpoint_trainer_state(const std::string& checkpoint_dir) {
  return read_trainer_state(fs::path(checkpoint_dir) / "trainer.json");
}

void load_training_state(const std::string& checkpoint_dir, optim::Optimizer& optimizer,
                         TrainerState& state, int rank, int world) {
  const fs::path dir(checkpoint_dir);
  load_optimizer_state((dir / "optimizer.safetensors").string(), optimizer, rank, world);
  state = read_trainer_state(dir / "trainer.json");
}

void verify_checkpoint(const std::string& checkpoint_dir) {
  const fs::path dir(checkpoint_dir);
  for (const char* f : {"model.safetensors", "optimizer.safetensors"})  // header, length, bytes
    io::SafetensorsReader((dir / f).string()).verify_checksums();
  read_trainer_state(dir / "trainer.json");
}

bool is_run_without_checkpoints(const std::string& path, const std::string& out_dir) {
  const fs::path p(path);
  std::error_code ec;
  if (!fs::is_directory(p, ec) || fs::exists(p / "trainer.json", ec) ||
      fs::weakly_canonical(p, ec) != fs::weakly_canonical(out_dir, ec))
    return false;
  if (!fs::exists(p / "checkpoints", ec)) return true;
  for (const auto& e : fs::directory_iterator(p / "checkpoints", ec))
    if (e.path().filename().string().starts_with("step_")) return false;
  return !ec;
}

json load_run_directory_config(const std::string& run_dir) {
  json config = read_json_file(fs::path(run_dir) / "config.json");
  migrate_legacy_config(config);
  return config;
}

std::string resolve_checkpoint_for_resume(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  GOSSAMER_CHECK(fs::exists(p, ec), "%s: no such checkpoint or run directory", path.c_str());
  if (fs::exists(p / "trainer.json")) {  // a checkpoint named explicitly: that one or nothing
    verify_checkpoint(p.string());
    return p.string();
  }
  auto all = list_checkpoints(p);
  GOSSAMER_CHECK(!all.empty(),
                 "%s: not a checkpoint (no trainer.json) and holds no complete checkpoint under "
                 "checkpoints/",
                 path.c_str());
  std::string reasons;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      verify_checkpoint(it->second.string());
      return it->second.string();
    } catch (const Error& e) {
      log_warn("resume: skipping the damaged checkpoint %s: %s", it->second.c_str(), e.what());
      reasons += std::string(reasons.empty() ? "" : "; ") + e.what();
    }
  }
  fail("%s: none of its %zu checkpoint(s) is intact (%s)", path.c_str(), all.size(),
       reasons.c_str());
}

json load_checkpoint_config(const std::string& checkpoint_dir) {
  const fs::path tfile = fs::path(checkpoint_dir) / "trainer.json";
  json t = read_json_file(tfile);
  json config = json_field<json>(t, "config", tfile);
  migrate_legacy_config(config);  // checkpoints written before optimizer sections
  return config;
}

}  // namespace gossamer::train
