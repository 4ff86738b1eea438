// The "single" backend: a world of one process, no MPI runtime. Collectives complete at once
// (reduce_scatter / all_gather copy unless in place, all_to_all_v copies the part for oneself, the
// rest leave the buffer as it is), send and recv have no peer, barrier does nothing. Calls are
// counted; by the formulas of communicator.h every byte count is 0 at world size 1.
#pragma once

#include <memory>

#include "comm/communicator.h"

namespace gossamer::comm {

std::unique_ptr<Communicator> make_single_communicator();

}  // namespace gossamer::comm
