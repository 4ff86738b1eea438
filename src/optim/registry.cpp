// The optimizer registry (see registry.h) and the validation of the optimizer section, which
// needs the registry to know a method's sections.
#include "optim/registry.h"

#include "comm/single_communicator.h"
#include "core/error.h"
#include "optim/data_parallel.h"
#include "optim/diloco.h"
#include "optim/gasloc.h"
#include "optim/local_adamw.h"
#include "optim/scape.h"
#include "optim/sparse_training.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& name : names) s += (s.empty() ? "" : ", ") + name;
  return s;
}

}  // namespace

const std::vector<OptimizerEntry>& optimizer_registry() {
  static const std::vector<OptimizerEntry> table = {
      {"adamw",
       "AdamW, data parallel (replicated, ZeRO-1 or ZeRO-2)",
       {},
       [](const OptimizerSetup& s) { return make_data_parallel(s, make_adamw_rule); },
       2},
      {"adams",
       "AdamS (momentum as its own normaliser), data parallel",
       {"adams"},
       [](const OptimizerSetup& s) { return make_data_parallel(s, make_adams_rule); },
       1},
      {"scape",
       "SCAPE: sparse communication of AdamS at 90-99% sparsity",
       {"adams", "scape"},
       make_scape,
       1},
      {"dst",
       "dynamic sparse training, naive: attention and MLP matrices sparse in blocks, pruned and "
       "regrown every few steps, AdamW on the active blocks (the baseline of smet)",
       {"dst"},
       make_dst,
       0},  // state for the active blocks only: their density is not known here
      {"smet",
       "SMET: dynamic sparse training with an optimizer warm-up for regrown blocks, a "
       "density-aware learning rate, and state kept only for active blocks",
       {"dst", "smet"},
       make_smet,
       0},
      {"local_adamw",
       "AdamW on each rank's own replica, no communication (the baseline of decentralised "
       "methods; evaluation sees the average of the replicas)",
       {},
       make_local_adamw,
       2},
      {"diloco",
       "DiLoCo: H inner AdamW steps on each rank's replica, then one all-reduce of the "
       "pseudo-gradient and an outer Nesterov step",
       {"diloco"},
       make_diloco,
       2},
      {"gasloc",
       "GASLoC: H inner AdamW steps, then gossip with the round's peers (no global collective) "
       "and an accelerated outer update",
       {"gasloc"},
       make_gasloc,
       2},
      {"gossip",
       "gossip averaging: inner AdamW steps, then each rank averages with the round's peers, no "
       "outer optimizer (the decentralised baseline, D-PSGD-style)",
       {"gossip"},
       make_gossip,
       2},
  };
  return table;
}

const OptimizerEntry* find_optimizer(std::string_view name) {
  for (const OptimizerEntry& e : optimizer_registry())
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<std::string> optimizer_names() {
  std::vector<std::string> names;
  for (const OptimizerEntry& e : optimizer_registry()) names.emplace_back(e.name);
  return names;
}

const std::string& OptimizerConfig::optimizer_name_doc() {
  static const std::string doc = [] {
    std::string s = "the method:";
    for (const OptimizerEntry& e : optimizer_registry())
      s += " \"" + std::string(e.name) + "\" (" + std::string(e.summary) + ");";
    s.back() = '.';
    return s;
  }();
  return doc;
}

std::string OptimizerConfig::section_unused_reason(std::string_view key) const {
  const OptimizerEntry* e = find_optimizer(name);
  if (e == nullptr) return "";
  for (std::string_view s : e->sections)
    if (s == key) return "";
  std::string reads;
  for (std::string_view s : e->sections) reads += (reads.empty() ? "" : ", ") + std::string(s);
  return strprintf("optimizer.name is \"%s\", which reads %s", name.c_str(),
                   reads.empty() ? "no method section" : ("only " + reads).c_str());
}

void OptimizerConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(find_optimizer(name) != nullptr, "%sname: unknown optimizer \"%s\" (known: %s)",
                 p.c_str(), name.c_str(), joined(optimizer_names()).c_str());
  GOSSAMER_CHECK(lr >= 0, "%slr: must be >= 0, found %g", p.c_str(), lr);
  GOSSAMER_CHECK(beta1 >= 0 && beta1 < 1, "%sbeta1: must lie in [0, 1), found %g", p.c_str(),
                 beta1);
  GOSSAMER_CHECK(beta2 >= 0 && beta2 < 1, "%sbeta2: must lie in [0, 1), found %g", p.c_str(),
                 beta2);
  GOSSAMER_CHECK(eps > 0, "%seps: must be > 0, found %g", p.c_str(), eps);
  GOSSAMER_CHECK(weight_decay >= 0, "%sweight_decay: must be >= 0, found %g", p.c_str(),
                 weight_decay);
  GOSSAMER_CHECK(grad_clip >= 0, "%sgrad_clip: must be >= 0, found %g", p.c_str(), grad_clip);
  scape.validate(p + "scape.");
  dst.validate(p + "dst.");
  smet.validate(p + "smet.");
  diloco.validate(p + "diloco.");
  gasloc.validate(p + "gasloc.");
  gossip.validate(p + "gossip.");
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerSetup& setup) {
  setup.config.validate();
  setup.parallel.validate();
  GOSSAMER_CHECK(setup.total_steps >= 0, "optimizer: total steps %lld",
                 (long long)setup.total_steps);
  return find_optimizer(setup.config.name)->make(setup);
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config,
                                          const model::ParamLayout& layout,
                                          const kernels::OpTable& ops, int64_t total_steps) {
  static const std::unique_ptr<comm::Communicator> single = comm::make_single_communicator();
  static const ParallelConfig parallel;
  return make_optimizer({config, parallel, layout, ops, *single, *single, /*seed=*/0, total_steps});
}

}  // namespace gossamer::optim
