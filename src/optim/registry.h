// The optimizer registry: one table of methods, each a name, a one-line summary, the config
// sections it reads (optimizer.<section>.*) and a factory. The trainer, the benchmark and the
// tools build optimizers only through make_optimizer(); nothing outside the table branches on a
// method's name. Adding a method = one entry here plus its own files (docs/CONTRIBUTING.md).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "optim/optimizer.h"

namespace gossamer::optim {

struct OptimizerEntry {
  std::string_view name;
  std::string_view summary;
  std::vector<std::string_view> sections;  // config sections the method reads
  std::unique_ptr<Optimizer> (*make)(const OptimizerSetup& setup);
  // fp32 state values per parameter each rank keeps at least, before ZeRO sharding divides
  // them (Adam's two moments: 2): a lower bound for the memory check (train/memory_check.h).
  int min_state_floats = 0;
};

const std::vector<OptimizerEntry>& optimizer_registry();
// nullptr when no method has this name.
const OptimizerEntry* find_optimizer(std::string_view name);
// Names in registry order, for help texts and errors.
std::vector<std::string> optimizer_names();

// Validates setup.config and setup.parallel and builds the method named by config.name.
// Throws gossamer::Error naming the key when a setting is invalid.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerSetup& setup);

// One process, no communication (tests, tools): a single-rank setup with seed 0.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config,
                                          const model::ParamLayout& layout,
                                          const kernels::OpTable& ops, int64_t total_steps = 0);

}  // namespace gossamer::optim
