// Checkpoints: a directory <run>/checkpoints/step_NNNNNNNN holding
//   model.safetensors      fp32 parameters by name (world-size independent)
//   optimizer.safetensors  the optimizer's state of every rank, by scope and dtype
//                          (run/optimizer_state_file.h)
//   trainer.json           step, data-loader position, RNG state, tokens seen, resolved config,
//                          and each safetensors file named by its checksums (files mixed across
//                          checkpoints are refused); each file's metadata names its step
// Written into a hidden temporary directory and renamed into place when complete, so a
// directory named step_* is always whole. Loading validates every tensor's name, dtype and
// shape against the model and optimizer and names the file and tensor on any mismatch.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "core/rng.h"
#include "data/loader.h"
#include "model/model.h"
#include "optim/optimizer.h"

namespace gossamer::run {

constexpr int kCheckpointFormatVersion = 1;

struct TrainerState {
  int64_t step = 0;  // optimizer steps completed
  int64_t tokens_seen = 0;
  // The global batch (tokens per step) since step batch_since_step, when tokens_seen was
  // batch_since_tokens (a resume that changes the global batch starts a new stretch); 0 in
  // checkpoints that predate the record. trainer.json checks tokens_seen against them.
  int64_t tokens_per_step = 0;
  int64_t batch_since_step = 0, batch_since_tokens = 0;
  data::LoaderPosition loader;
  Rng::State sample_rng{};
};

// The trainer state a fresh run of `seed` starts from (step 0, sampling RNG seeded).
TrainerState initial_trainer_state(uint64_t seed);

// model.safetensors: every parameter by name (fp32) plus format metadata, the model config and
// the step of the checkpoint it is written for.
void write_model_weights(const std::string& path, const model::ParamLayout& layout,
                         std::span<const float> params, const nlohmann::json& config, int64_t step);
// trainer.json's content for `state` and the resolved run config.
nlohmann::json trainer_state_json(const TrainerState& state, const nlohmann::json& config);

// Writes a checkpoint for `state.step` under run_dir/checkpoints and returns its path.
// model.safetensors holds `weights` (the model's parameters, or the optimizer's evaluation
// weights when its replicas differ). Collective over `comm`: every rank calls it; the
// optimizer's state is gathered (run/optimizer_state_file.h) and rank 0 writes the directory
// (other ranks return "").
std::string save_checkpoint(const std::string& run_dir, const model::ParamLayout& layout,
                            std::span<const float> weights, optim::Optimizer& optimizer,
                            const TrainerState& state, const nlohmann::json& config,
                            comm::Communicator& comm);
// One process (tools and tests).
std::string save_checkpoint(const std::string& run_dir, const model::Model& model,
                            optim::Optimizer& optimizer, const TrainerState& state,
                            const nlohmann::json& config);

// Deletes all but the newest `keep` of run_dir's checkpoints at or before `step`, the step just
// written (keep == 0: none deleted). Checkpoints after `step` (an earlier timeline's, when a run
// resumed from an older checkpoint) are never deleted: the run replaces each when it reaches
// its step.
void prune_checkpoints(const std::string& run_dir, int64_t keep, int64_t step);
// The steps of run_dir's checkpoints after `step`, for the warning of a run resumed before them.
std::vector<int64_t> checkpoints_after(const std::string& run_dir, int64_t step);
// Moves aside (checkpoints/aside-step_N-TIMESTAMP, with a warning each) every directory step_N
// whose content is not a checkpoint of step N: no trainer.json, an unreadable one, or another
// step's. Readers skip them with a warning; the training holding the run's lock calls this, so
// that such a directory neither shadows nor blocks a checkpoint.
void move_checkpoint_debris_aside(const std::string& run_dir);

// Resolves a checkpoint path: a checkpoint directory itself, or a run directory (its newest
// checkpoint). Throws naming the path when there is none.
std::string resolve_checkpoint(const std::string& path);

// Whether --resume `path` names the run directory `out_dir` itself and it holds no checkpoint
// yet: a run stopped before its first checkpoint, which --resume starts again from step 0.
bool is_run_without_checkpoints(const std::string& path, const std::string& out_dir);
// The resolved run config a run directory was started with (RUN/config.json).
nlohmann::json load_run_directory_config(const std::string& run_dir);

// For --resume: a checkpoint directory itself (it must verify), or the newest checkpoint of a
// run directory that verifies; damaged newer ones are skipped with a warning naming them.
// Throws naming the path when none is intact.
std::string resolve_checkpoint_for_resume(const std::string& path);
// Throws gossamer::Error naming the file when the checkpoint's files are damaged: a safetensors
// header or length that does not validate, or a trainer.json field that is missing or invalid.
void verify_checkpoint(const std::string& checkpoint_dir);

// The checkpoint's trainer.json (every field checked).
TrainerState read_checkpoint_trainer_state(const std::string& checkpoint_dir);

// Loads parameters into the model (shapes must match the model's layout).
void load_model_weights(const std::string& checkpoint_dir, model::Model& model);
// Loads this rank's optimizer state (run/optimizer_state_file.h: sharded state loads at any
// world size, per-rank state only at the one it was saved at) and the trainer state.
void load_training_state(const std::string& checkpoint_dir, optim::Optimizer& optimizer,
                         TrainerState& state, int rank = 0, int world = 1);
// The resolved run config stored in the checkpoint's trainer.json.
nlohmann::json load_checkpoint_config(const std::string& checkpoint_dir);

}  // namespace gossamer::run
