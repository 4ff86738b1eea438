// `gossamer train --ranks N` (issue 41): the N ranks of one run as threads of this process, each
// a run_training with its own communicator of one in-process world
// (comm/inprocess_communicator.h), its own model replica, optimizer, data position and log rank,
// as under `mpirun -np N`; rank 0 writes the run directory. Refused under a launcher (its ranks
// are processes already) and on the GPU (one GPU per rank). The ranks share the machine's
// cores through the scheduler: each rank's ops get kernels.threads threads (0: cores / N, at
// least 1). Memory is checked once, before any rank allocates, for N ranks
// (train/memory_check.h).
// Returns the first non-zero exit code
// in rank order (0 when every rank finished); an error on a rank is rethrown (the lowest rank's).
#pragma once

#include "run/run_config.h"
#include "train/trainer.h"

namespace gossamer::train {

// `key` names the setting in messages: "--ranks" or "parallel.ranks".
int run_training_ranks(const run::RunConfig& config, const TrainStart& start, int ranks,
                       const char* key = "--ranks");

}  // namespace gossamer::train
