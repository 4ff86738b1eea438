// The training loop of `gossamer train`: builds the model, data loaders and optimizer from a
// RunConfig, optionally resumes from a checkpoint, and runs the steps (gradient accumulation,
// clipping, schedule, evaluation, checkpoints, samples, metrics). It knows no optimizer by
// name. Returns the process exit code: 0 when done, 130 when interrupted by a signal (after
// writing a checkpoint of the last completed step).
#pragma once

#include <string>

#include "train/run_config.h"

namespace gossamer::train {

// init_from (optional, exclusive with resume_path): start from the weights of a checkpoint, a
// run directory or a Hugging Face model directory (hf/import.h), with a fresh optimizer.
int run_training(RunConfig config, const std::string& resume_path,
                 const std::string& init_from = "");

}  // namespace gossamer::train
