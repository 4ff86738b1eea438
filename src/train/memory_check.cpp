// available_host_memory() and check_run_fits_in_memory() (see memory_check.h).
#include "train/memory_check.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "model/memory_estimate.h"
#include "optim/registry.h"

namespace gossamer::train {

namespace {

// The first number in the file (cgroup v2 memory.max / memory.current), or -1 ("max", absent).
int64_t read_number(const char* path) {
  std::ifstream in(path);
  int64_t x = -1;
  if (!(in >> x)) return -1;
  return x;
}

double gib(uint64_t bytes) {
  return double(bytes) / double(uint64_t(1) << 30);
}

}  // namespace

HostMemory available_host_memory() {
  HostMemory m;
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(13));
    uint64_t kib = 0;
    if (fields >> kib) m.available = kib * 1024, m.source = "MemAvailable";
  }
  const int64_t limit = read_number("/sys/fs/cgroup/memory.max");
  const int64_t used = read_number("/sys/fs/cgroup/memory.current");
  if (limit > 0 && used >= 0) {
    const uint64_t left = uint64_t(std::max<int64_t>(limit - used, 0));
    if (m.available == 0 || left < m.available) m.available = left, m.source = "cgroup memory.max";
  }
  if (m.available == 0) m.source = "unknown (no MemAvailable in /proc/meminfo)";
  return m;
}

void check_run_fits_in_memory(const run::RunConfig& config, int world, int ranks_on_node,
                              const kernels::OpTable& ops, const HostMemory& memory) {
  if (!ops.memory->host_accessible) return;  // the model lives in device memory
  if (memory.available == 0) {
    log_warn("memory check skipped: available memory %s", memory.source.c_str());
    return;
  }
  const model::ModelMemory m = model::estimate_model_memory(
      config.model, config.data.micro_batch, config.data.seq_len, ops, config.kernels.matmul_dtype);
  const optim::OptimizerEntry* entry = optim::find_optimizer(config.optimizer.name);
  const int shards = config.parallel.zero_stage > 0 ? world : 1;
  const uint64_t state =
      entry ? m.parameter_count * uint64_t(entry->min_state_floats) * sizeof(float) / shards : 0;
  const uint64_t need = m.total() + state;
  const uint64_t per_rank = memory.available / uint64_t(std::max(1, ranks_on_node));
  GOSSAMER_CHECK(
      need <= per_rank,
      "the run needs at least %.2f GiB per rank (model.n_layer %d, model.d_model %d: %.3g "
      "parameters, %.2f GiB with their gradients; optimizer state %.2f GiB; activations %.2f GiB "
      "and the LM head's buffers %.2f GiB for data.micro_batch %d x data.seq_len %d), and this "
      "machine has %.2f GiB available (%s) for %d rank(s) on it: reduce the model, "
      "data.micro_batch or data.seq_len, or run on more memory",
      gib(need), config.model.n_layer, config.model.d_model, double(m.parameter_count),
      gib(m.parameters + m.gradients), gib(state), gib(m.activations), gib(m.head),
      config.data.micro_batch, config.data.seq_len, gib(memory.available), memory.source.c_str(),
      ranks_on_node);
  log_info(
      "memory: at least %.2f GiB per rank (parameters and gradients %.2f, optimizer %.2f, "
      "activations %.2f, LM head %.2f); %.2f GiB available (%s) for %d rank(s)",
      gib(need), gib(m.parameters + m.gradients), gib(state), gib(m.activations), gib(m.head),
      gib(memory.available), memory.source.c_str(), ranks_on_node);
}

}  // namespace gossamer::train
