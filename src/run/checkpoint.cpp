// Implementation of checkpoint save/load (see checkpoint.h for the directory layout).
#include "run/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "comm/single_communicator.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "io/staging_dir.h"
#include "model/host_params.h"
#include "run/optimizer_state_file.h"
#include "run/run_config.h"

namespace gossamer::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The safetensors files of a checkpoint; trainer.json lists each by its checksums' digest.
constexpr const char* kCheckpointFiles[] = {"model.safetensors", "optimizer.safetensors"};
// The metadata key naming the step of the checkpoint a file was written for.
constexpr const char* kStepMetadataKey = "checkpoint_step";

std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

// A directory step_N (N: 8 to 18 digits) under checkpoints/, or -1.
int64_t step_of_name(const std::string& name) {
  const std::string digits = name.starts_with("step_") ? name.substr(5) : "";
  const bool numbered = digits.size() >= 8 && digits.size() <= 18 &&
                        digits.find_first_not_of("0123456789") == std::string::npos;
  return numbered ? std::stoll(digits) : -1;
}

json read_json_file(const fs::path& path);

struct CheckpointListing {
  std::vector<std::pair<int64_t, fs::path>> checkpoints;  // name and content agree; by step
  std::vector<std::pair<fs::path, std::string>> debris;   // a directory step_N, and what is wrong
};

// The checkpoints of a run directory: each step_N whose trainer.json gives step N, sorted by
// step; the others (no trainer.json, an unreadable one, another step) are debris.
CheckpointListing list_checkpoints(const fs::path& run_dir) {
  CheckpointListing out;
  const fs::path dir = run_dir / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const int64_t step = step_of_name(entry.path().filename().string());
    if (step < 0 || !entry.is_directory()) continue;
    const fs::path tfile = entry.path() / "trainer.json";
    if (!fs::exists(tfile, ec)) {
      out.debris.emplace_back(entry.path(), "it has no trainer.json");
      continue;
    }
    try {
      const json t = read_json_file(tfile);
      const json* s = t.contains("step") ? &t.at("step") : nullptr;
      if (!s || !s->is_number_integer()) {
        out.debris.emplace_back(entry.path(), "its trainer.json has no integer step");
      } else if (s->get<int64_t>() != step) {
        out.debris.emplace_back(entry.path(), strprintf("its trainer.json is of step %lld",
                                                        (long long)s->get<int64_t>()));
      } else {
        out.checkpoints.emplace_back(step, entry.path());
      }
    } catch (const Error& e) {
      out.debris.emplace_back(entry.path(), e.what());
    }
  }
  std::sort(out.checkpoints.begin(), out.checkpoints.end());
  std::sort(out.debris.begin(), out.debris.end());
  return out;
}

// The checkpoints of `run_dir`; a reader warns about the directories it skips.
std::vector<std::pair<int64_t, fs::path>> readable_checkpoints(const fs::path& run_dir) {
  CheckpointListing l = list_checkpoints(run_dir);
  for (const auto& [path, problem] : l.debris)
    log_warn("skipping %s: not a checkpoint of that step (%s)", path.c_str(), problem.c_str());
  return std::move(l.checkpoints);
}

json read_json_file(const fs::path& path) {
  return io::read_json_object(path.string(), "checkpoint file");
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
                         std::span<const float> params, const json& config, int64_t step) {
  GOSSAMER_CHECK(params.size() == layout.total(), "%s: %zu weights for a layout of %zu",
                 path.c_str(), params.size(), layout.total());
  io::SafetensorsWriter weights;
  weights.set_metadata("format", "gossamer-model");
  weights.set_metadata(kStepMetadataKey, std::to_string(step));
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
  json t = {{"format_version", kCheckpointFormatVersion},
            {"step", state.step},
            {"tokens_seen", state.tokens_seen},
            {"loader", {{"epoch", state.loader.epoch}, {"cursor", state.loader.cursor}}},
            {"sample_rng", rng},
            {"config", config}};
  if (state.tokens_per_step > 0) {
    t["tokens_per_step"] = state.tokens_per_step;
    t["batch_since"] = {{"step", state.batch_since_step},
                        {"tokens_seen", state.batch_since_tokens}};
  }
  return t;
}

std::string save_checkpoint(const std::string& run_dir, const model::ParamLayout& layout,
                            std::span<const float> weights, optim::Optimizer& optimizer,
                            const TrainerState& state, const json& config,
                            comm::Communicator& comm) {
  if (comm.rank() != 0) {  // rank 0 writes; the others send their optimizer state
    write_optimizer_state("", state.step, optimizer, comm);
    return "";
  }

  const fs::path dir = fs::path(run_dir) / "checkpoints";
  std::error_code ec;
  const bool created = fs::create_directories(dir, ec);
  GOSSAMER_CHECK(!ec, "%s: cannot create checkpoint directory: %s", dir.c_str(),
                 ec.message().c_str());
  if (created) io::fsync_directory(run_dir);
  // A directory step_N is complete whenever it exists: files are written into a staging
  // directory, each fsynced, and the directory is renamed into place and the parent synced.
  io::StagingDir staging((dir / step_name(state.step)).string(), io::RunCheckpoint{}, "checkpoint");
  const fs::path tmp_dir = staging.path();
  write_model_weights((tmp_dir / "model.safetensors").string(), layout, weights, config,
                      state.step);
  write_optimizer_state((tmp_dir / "optimizer.safetensors").string(), state.step, optimizer, comm);
  // trainer.json names its files by their checksums, so that a file copied in from another
  // checkpoint is refused (check_file_tie).
  json trainer = trainer_state_json(state, config);
  for (const char* f : kCheckpointFiles)
    trainer["files"][f] = io::SafetensorsReader((tmp_dir / f).string()).checksums_digest();
  staging.write_file("trainer.json", trainer.dump(2) + "\n");
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

void prune_checkpoints(const std::string& run_dir, int64_t keep, int64_t step) {
  if (keep <= 0) return;
  std::vector<fs::path> timeline;  // at or before the step just written
  for (const auto& [s, path] : list_checkpoints(run_dir).checkpoints)
    if (s <= step) timeline.push_back(path);
  for (size_t i = 0; i + size_t(keep) < timeline.size(); ++i) {
    // Renamed to a writer's temporary name first (atomic): a kill in the middle of the deletion
    // leaves ".step_N.tmp-PID", which the next start removes as a dead writer's leftover, not a
    // checkpoint without trainer.json.
    const fs::path& dir = timeline[i];
    const fs::path doomed =
        dir.parent_path() / strprintf(".%s.tmp-%d", dir.filename().c_str(), int(::getpid()));
    std::error_code ec;
    fs::rename(dir, doomed, ec);
    if (!ec) fs::remove_all(doomed, ec);
    if (ec) log_warn("could not delete old checkpoint %s: %s", dir.c_str(), ec.message().c_str());
  }
}

std::vector<int64_t> checkpoints_after(const std::string& run_dir, int64_t step) {
  std::vector<int64_t> later;
  for (const auto& [s, path] : list_checkpoints(run_dir).checkpoints)
    if (s > step) later.push_back(s);
  return later;
}

void move_checkpoint_debris_aside(const std::string& run_dir) {
  for (const auto& [path, problem] : list_checkpoints(run_dir).debris) {
    const fs::path aside =
        path.parent_path() / ("aside-" + path.filename().string() + "-" + utc_now("%Y%m%d-%H%M%S"));
    std::error_code ec;
    fs::rename(path, aside, ec);
    GOSSAMER_CHECK(!ec, "%s is not a checkpoint of that step (%s) and cannot be moved aside: %s",
                   path.c_str(), problem.c_str(), ec.message().c_str());
    log_warn("run directory: moved %s aside to %s: not a checkpoint of that step (%s)",
             path.c_str(), aside.filename().c_str(), problem.c_str());
  }
}

std::string resolve_checkpoint(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  GOSSAMER_CHECK(fs::exists(p, ec), "%s: no such checkpoint or run directory", path.c_str());
  if (fs::exists(p / "trainer.json")) return p.string();
  auto all = readable_checkpoints(p);
  GOSSAMER_CHECK(!all.empty(),
                 "%s: not a checkpoint (no trainer.json) and holds no complete checkpoint under "
                 "checkpoints/",
                 path.c_str());
  return all.back().second.string();
}

namespace {

// Throws when `reader`, the file `name` of the checkpoint `dir`, is not the file its trainer.json
// names: its tensors' checksums are not the ones listed there (a file copied in from another
// checkpoint, or a trainer.json that was). Checkpoints written before trainer.json listed its
// files pass.
void check_file_tie(const fs::path& dir, const char* name, const io::SafetensorsReader& reader) {
  const fs::path tfile = dir / "trainer.json";
  std::error_code ec;
  if (!fs::exists(tfile, ec)) return;  // a bare weights file
  const json t = read_json_file(tfile);
  if (!t.contains("files")) return;  // written before the tie
  const json& files = t.at("files");
  GOSSAMER_CHECK(files.is_object() && files.contains(name) && files.at(name).is_string(),
                 "%s: \"files\" must name %s by its checksum digest", tfile.c_str(), name);
  if (files.at(name).get<std::string>() == reader.checksums_digest()) return;
  const auto& meta = reader.metadata();
  const auto it = meta.find(kStepMetadataKey);
  const std::string theirs =
      it == meta.end() ? "" : strprintf(" (the file says it is step %s's)", it->second.c_str());
  const json* step = t.contains("step") ? &t.at("step") : nullptr;
  fail(
      "%s: does not belong to this checkpoint%s: its tensors' checksums are not the ones %s "
      "lists for checkpoint step %s; files mixed across checkpoints are refused",
      reader.path().c_str(), theirs.c_str(), tfile.c_str(),
      step ? step->dump().c_str() : "(unknown)");
}

}  // namespace

void load_model_weights(const std::string& checkpoint_dir, model::Model& model) {
  const std::string file = (fs::path(checkpoint_dir) / "model.safetensors").string();
  io::SafetensorsReader reader(file);
  reader.verify_checksums();  // a damaged file is an error, never weights
  check_file_tie(checkpoint_dir, "model.safetensors", reader);
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

namespace {

// The integer field `key` of `j` (a JSON integer: not a float, string or bool), in [lo, hi];
// `name` is its dotted name in messages.
int64_t int_field(const json& j, const char* key, const std::string& name, const fs::path& file,
                  int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max()) {
  GOSSAMER_CHECK(j.contains(key), "%s: missing key \"%s\"", file.c_str(), name.c_str());
  const json& v = j.at(key);
  GOSSAMER_CHECK(v.is_number_integer(), "%s: %s must be an integer, found %s", file.c_str(),
                 name.c_str(), v.dump().c_str());
  GOSSAMER_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(hi),
                 "%s: %s must be at most %lld, found %s", file.c_str(), name.c_str(), (long long)hi,
                 v.dump().c_str());
  const int64_t x = v.get<int64_t>();
  if (hi == std::numeric_limits<int64_t>::max())
    GOSSAMER_CHECK(x >= lo, "%s: %s must be >= %lld, found %lld", file.c_str(), name.c_str(),
                   (long long)lo, (long long)x);
  GOSSAMER_CHECK(x >= lo && x <= hi, "%s: %s must lie in [%lld, %lld], found %lld", file.c_str(),
                 name.c_str(), (long long)lo, (long long)hi, (long long)x);
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
  state.step = int_field(t, "step", "step", tfile, 0);
  state.tokens_seen = int_field(t, "tokens_seen", "tokens_seen", tfile, 0);
  if (t.contains("tokens_per_step")) {
    // Since batch_since, every step had tokens_per_step tokens (trainer.json before that
    // record: tokens_seen a whole number of steps).
    state.tokens_per_step = int_field(t, "tokens_per_step", "tokens_per_step", tfile, 1);
    const json since = json_field<json>(t, "batch_since", tfile);
    GOSSAMER_CHECK(since.is_object(), "%s: batch_since must be an object", tfile.c_str());
    state.batch_since_step = int_field(since, "step", "batch_since.step", tfile, 0, state.step);
    state.batch_since_tokens =
        int_field(since, "tokens_seen", "batch_since.tokens_seen", tfile, 0, state.tokens_seen);
    const int64_t want =
        state.batch_since_tokens + (state.step - state.batch_since_step) * state.tokens_per_step;
    GOSSAMER_CHECK(state.tokens_seen == want,
                   "%s: step %lld and tokens_seen %lld disagree (%lld tokens per step since step "
                   "%lld make %lld): the file was edited or damaged",
                   tfile.c_str(), (long long)state.step, (long long)state.tokens_seen,
                   (long long)state.tokens_per_step, (long long)state.batch_since_step,
                   (long long)want);
  } else {
    GOSSAMER_CHECK((state.step == 0) == (state.tokens_seen == 0) &&
                       (state.step == 0 || state.tokens_seen % state.step == 0),
                   "%s: step %lld and tokens_seen %lld disagree (not a whole number of tokens per "
                   "step): the file was edited or damaged",
                   tfile.c_str(), (long long)state.step, (long long)state.tokens_seen);
  }
  const json loader = json_field<json>(t, "loader", tfile);
  GOSSAMER_CHECK(loader.is_object(), "%s: loader must be an object", tfile.c_str());
  state.loader.epoch = uint64_t(int_field(loader, "epoch", "loader.epoch", tfile, 0));
  state.loader.cursor = uint64_t(int_field(loader, "cursor", "loader.cursor", tfile, 0));
  json rng = json_field<json>(t, "sample_rng", tfile);
  GOSSAMER_CHECK(rng.is_array() && rng.size() == 4, "%s: sample_rng must hold 4 words",
                 tfile.c_str());
  for (size_t i = 0; i < 4; ++i) state.sample_rng[i] = parse_u64(rng[i], "sample_rng", tfile);
  GOSSAMER_CHECK(state.sample_rng != Rng::State{},
                 "%s: sample_rng is all zero, a state the generator never leaves (it would give "
                 "zeros forever): the file was edited or damaged",
                 tfile.c_str());
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
  read_trainer_state(dir / "trainer.json");
  for (const char* f : kCheckpointFiles) {
    const io::SafetensorsReader reader((dir / f).string());
    reader.verify_checksums();  // header, length, bytes
    check_file_tie(dir, f, reader);
  }
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
  auto all = readable_checkpoints(p);
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

}  // namespace gossamer::run
