// The training loop of `gossamer train`: builds the model, data loaders and optimizer from a
// RunConfig, optionally resumes from a checkpoint, and runs the steps (gradient accumulation,
// clipping, schedule, evaluation, checkpoints, samples, metrics). It knows no optimizer by
// name. Returns the process exit code: 0 when done, 130 when interrupted by a signal (after
// writing a checkpoint of the last completed step).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "kernels/ops.h"
#include "run/run_config.h"
#include "train/memory_check.h"

namespace gossamer::train {

// How a run starts in train.out_dir (train/run_directory.h).
struct TrainStart {
  // Continue from a checkpoint, or from a run directory's newest intact checkpoint.
  std::string resume;
  // Move a run already in train.out_dir aside and start afresh (excludes resume).
  bool overwrite = false;
  // With resume: config keys of the run's definition that may differ from the checkpoint's
  // (run/resume_check.h), and "global_batch".
  std::vector<std::string> allow_change;
  // Tests: compute with this op table instead of the one kernels.device selects (it must
  // outlive the run).
  const kernels::OpTable* ops = nullptr;
  // Tests: with device memory (`ops`) at several ranks, the communicator for the gradients and
  // weights, given the control communicator, instead of the one parallel.backend selects.
  std::function<std::unique_ptr<comm::Communicator>(comm::Communicator& control)> buffer_comm;
  // Ranks in one process (train/inprocess_ranks.h) and tests: the control communicator, called
  // once, instead of the one parallel.backend selects.
  std::function<std::unique_ptr<comm::Communicator>()> control_comm;
  // Ranks in one process: the memory available, measured once before any rank allocated, for
  // every rank's memory check (train/memory_check.h) instead of measuring it again.
  std::optional<HostMemory> host_memory;
};

int run_training(run::RunConfig config, const TrainStart& start = {});

}  // namespace gossamer::train
