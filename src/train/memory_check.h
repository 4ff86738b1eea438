// The memory check before a training allocates anything: a lower bound of what each rank will
// hold (model/memory_estimate.h: parameters, gradients, activations, the LM head's buffers; plus
// the optimizer's state from its registry entry, divided over the ranks under ZeRO) against the
// memory this machine has for each of its ranks (MemAvailable of /proc/meminfo, or the cgroup's
// limit less its usage when that is smaller, shared by the ranks on this node). A run whose lower
// bound does not fit is refused naming the estimate, its parts and the memory available, instead
// of being killed by the kernel's OOM killer after minutes with no message.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/ops.h"
#include "run/run_config.h"

namespace gossamer::train {

struct HostMemory {
  uint64_t available = 0;  // bytes; 0 when unknown
  std::string source;      // "MemAvailable", "cgroup memory.max", or why unknown
};
// The memory available to new allocations on this machine now.
HostMemory available_host_memory();

// Throws gossamer::Error when config's lower bound per rank exceeds `memory.available /
// ranks_on_node` (nothing is checked when the ops' memory is not the host's, or when the
// available memory is unknown: logged).
void check_run_fits_in_memory(const run::RunConfig& config, int world, int ranks_on_node,
                              const kernels::OpTable& ops, const HostMemory& memory);

}  // namespace gossamer::train
