// Optimizer registry: name -> update rule, wrapped in the data-parallel synchroniser; and
// OptimizerConfig validation.
#include <functional>
#include <map>

#include "comm/single_communicator.h"
#include "core/error.h"
#include "optim/data_parallel.h"
#include "optim/optimizer.h"
#include "optim/scape.h"
#include "optim/update_rule.h"

namespace gossamer::optim {

namespace {
using RuleFactory = std::function<std::unique_ptr<UpdateRule>(
    const OptimizerConfig&, const model::ParamLayout&, const kernels::OpTable&, size_t, size_t)>;

const std::map<std::string, RuleFactory>& registry() {
  static const std::map<std::string, RuleFactory> table = {
      {"adamw", make_adamw_rule},
      {"adams", make_adams_rule},
  };
  return table;
}

std::string joined_names() {
  std::string s;
  for (const auto& name : optimizer_names()) s += (s.empty() ? "" : ", ") + name;
  return s;
}
}  // namespace

std::vector<std::string> optimizer_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  names.push_back("scape");
  return names;
}

void OptimizerConfig::validate(const std::string& p) const {
  GOSSAMER_CHECK(registry().count(name) || name == "scape",
                 "%sname: unknown optimizer \"%s\" (known: %s)", p.c_str(), name.c_str(),
                 joined_names().c_str());
  GOSSAMER_CHECK(lr >= 0, "%slr: must be >= 0, found %g", p.c_str(), lr);
  GOSSAMER_CHECK(beta1 >= 0 && beta1 < 1, "%sbeta1: must lie in [0, 1), found %g", p.c_str(),
                 beta1);
  GOSSAMER_CHECK(beta2 >= 0 && beta2 < 1, "%sbeta2: must lie in [0, 1), found %g", p.c_str(),
                 beta2);
  GOSSAMER_CHECK(eps > 0, "%seps: must be > 0, found %g", p.c_str(), eps);
  GOSSAMER_CHECK(weight_decay >= 0, "%sweight_decay: must be >= 0, found %g", p.c_str(),
                 weight_decay);
  GOSSAMER_CHECK(adams_form == "code" || adams_form == "paper",
                 "%sadams_form: must be \"code\" or \"paper\", found \"%s\"", p.c_str(),
                 adams_form.c_str());
  GOSSAMER_CHECK(sparsity >= 0 && sparsity < 1, "%ssparsity: must lie in [0, 1), found %g",
                 p.c_str(), sparsity);
  GOSSAMER_CHECK(dense_warmup_steps >= 0, "%sdense_warmup_steps: must be >= 0", p.c_str());
  GOSSAMER_CHECK(dense_refresh_every >= 0, "%sdense_refresh_every: must be >= 0", p.c_str());
  GOSSAMER_CHECK(
      mask_score == "momentum" || mask_score == "momentum_residual" || mask_score == "gradient",
      "%smask_score: must be \"momentum\", \"momentum_residual\" or \"gradient\", "
      "found \"%s\"",
      p.c_str(), mask_score.c_str());
  GOSSAMER_CHECK(mask_encoding == "auto" || mask_encoding == "indices" || mask_encoding == "bitmap",
                 "%smask_encoding: must be \"auto\", \"indices\" or \"bitmap\", found \"%s\"",
                 p.c_str(), mask_encoding.c_str());
  GOSSAMER_CHECK(grad_clip >= 0, "%sgrad_clip: must be >= 0, found %g", p.c_str(), grad_clip);
  GOSSAMER_CHECK(scape_reading == "A" || scape_reading == "B",
                 "%sscape_reading: must be \"A\" or \"B\", found \"%s\"", p.c_str(),
                 scape_reading.c_str());
  GOSSAMER_CHECK(catch_up_max >= 1 && catch_up_max <= 1000000,
                 "%scatch_up_max: must lie in [1, 1000000], found %lld", p.c_str(),
                 (long long)catch_up_max);
  GOSSAMER_CHECK(catch_up_max == 1 || scape_reading == "B",
                 "%scatch_up_max: only scape_reading \"B\" catches up (found %lld with reading "
                 "\"%s\")",
                 p.c_str(), (long long)catch_up_max, scape_reading.c_str());
  GOSSAMER_CHECK(scape_reading == "A" || mask_score != "momentum_residual",
                 "%smask_score: \"momentum_residual\" scores reading A's residual; reading B "
                 "has none (use \"momentum\" or \"gradient\")",
                 p.c_str());
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config,
                                          const ParallelConfig& parallel,
                                          const model::ParamLayout& layout,
                                          const kernels::OpTable& ops, comm::Communicator& comm) {
  config.validate();
  parallel.validate();
  if (config.name == "scape") return std::make_unique<Scape>(config, parallel, layout, ops, comm);
  const RuleFactory& rule = registry().at(config.name);
  return std::make_unique<DataParallel>(
      config, parallel, layout, ops, comm,
      [&](size_t begin, size_t end) { return rule(config, layout, ops, begin, end); });
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config,
                                          const model::ParamLayout& layout,
                                          const kernels::OpTable& ops) {
  static const std::unique_ptr<comm::Communicator> single = comm::make_single_communicator();
  return make_optimizer(config, ParallelConfig{}, layout, ops, *single);
}

}  // namespace gossamer::optim
