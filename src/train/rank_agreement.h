// Every rank of a job must train the same run: the same resolved config (but for the run
// directory) and the same data files. At start-up the ranks compare a hash of both; on a
// mismatch rank 0's config is broadcast and each rank that differs names the first key (or
// data file) that does, on rank 0's terms, so a rank started with another --set fails at once
// with a clear message instead of diverging silently or dying in a collective of another size.
// Invariant: a collective over `comm`: every rank calls it at the same point, before any
// training collective.
#pragma once

#include <nlohmann/json.hpp>

#include "comm/communicator.h"

namespace gossamer::train {

// `config`: this rank's resolved config; `data_files`: the identity of its data (each file's
// path and size). Throws gossamer::Error on the ranks that differ from rank 0.
void check_ranks_agree(comm::Communicator& comm, const nlohmann::json& config,
                       const nlohmann::json& data_files);

}  // namespace gossamer::train
