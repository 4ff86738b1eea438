// OptimizerConfig: the `optimizer` section of a run config. Keys every method shares sit at
// optimizer.* (name, lr, betas, eps, weight_decay, grad_clip); each method's own keys sit in
// its section, optimizer.<section>.*, and a method reads only the sections the registry lists
// for it (optim/registry.cpp): setting a section the method does not read is an error naming
// both, and an old flat key (before sections existed) is an error naming its new place.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "core/enum_names.h"
#include "optim/local_steps_config.h"
#include "optim/scape_config.h"
#include "optim/sparse_training_config.h"

namespace gossamer::optim {

enum class AdamsForm { ADAMS_FORM_CODE, ADAMS_FORM_PAPER };

// optimizer.adams: the AdamS update (used by adams and by scape's update).
struct AdamsConfig {
  AdamsForm form = AdamsForm::ADAMS_FORM_CODE;

  template <class V>
  void visit(V& v) {
    v("form", form,
      "code: the official code's bias-corrected form; paper: without bias correction "
      "(docs/SCAPE.md)");
  }
};

struct OptimizerConfig {
  std::string name = "adamw";
  double lr = 6e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  AdamsConfig adams;
  ScapeConfig scape;
  DstConfig dst;
  SmetConfig smet;
  DilocoConfig diloco;
  GaslocConfig gasloc;
  GossipConfig gossip;

  template <class V>
  void visit(V& v) {
    v("name", name, optimizer_name_doc());
    v("lr", lr, "peak learning rate (after warm-up)");
    v("beta1", beta1, "first-moment decay");
    v("beta2", beta2,
      "second-moment decay (adams: weight of the previous momentum in the normaliser)");
    v("eps", eps, "denominator epsilon");
    v("weight_decay", weight_decay,
      "decoupled weight decay, applied to linear-layer matrices only (not to biases, norms or "
      "embeddings)");
    v("grad_clip", grad_clip, "clip the global gradient norm to this value (0: no clipping)");
    v.subsection("adams", adams, "the AdamS update (read by adams and scape)",
                 section_unused_reason("adams"));
    v.subsection("scape", scape, "SCAPE: sparse communication on top of AdamS (read by scape)",
                 section_unused_reason("scape"));
    v.subsection("dst", dst,
                 "dynamic sparse training: the masks and their schedule (read by dst and smet)",
                 section_unused_reason("dst"));
    v.subsection("smet", smet, "SMET's fixes for regrown weights (read by smet)",
                 section_unused_reason("smet"));
    v.subsection("diloco", diloco,
                 "DiLoCo: local steps and the outer Nesterov step (read by diloco)",
                 section_unused_reason("diloco"));
    v.subsection("gasloc", gasloc,
                 "GASLoC: local steps, gossip with the round's peers and the accelerated outer "
                 "update (read by gasloc)",
                 section_unused_reason("gasloc"));
    v.subsection("gossip", gossip,
                 "gossip averaging with peers, no outer optimizer (read by gossip)",
                 section_unused_reason("gossip"));
    for (const auto& [old_key, new_path] : kMovedKeys) v.moved(old_key, new_path);
  }
  // Throws gossamer::Error naming the key (prefixed by `path`) when a value is invalid or the
  // name is not in the registry.
  void validate(const std::string& path = "optimizer.") const;
  // "" when `name` reads section `key` (or when `name` is unknown: validate() reports that);
  // otherwise why the section is not used, naming the method and the sections it reads.
  std::string section_unused_reason(std::string_view key) const;

  // The doc line of `name`: the registry's methods and what each is.
  static const std::string& optimizer_name_doc();

  // Keys that were flat before per-method sections existed, and where they live now.
  static constexpr std::pair<const char*, const char*> kMovedKeys[] = {
      {"adams_form", "optimizer.adams.form"},
      {"sparsity", "optimizer.scape.sparsity"},
      {"dense_warmup_steps", "optimizer.scape.dense_warmup_steps"},
      {"dense_refresh_every", "optimizer.scape.dense_refresh_every"},
      {"mask_score", "optimizer.scape.mask_score"},
      {"mask_encoding", "optimizer.scape.mask_encoding"},
      {"residual", "optimizer.scape.residual"},
      {"scape_reading", "optimizer.scape.reading"},
      {"catch_up_max", "optimizer.scape.catch_up_max"},
  };
};

}  // namespace gossamer::optim

namespace gossamer {
template <>
struct EnumNames<optim::AdamsForm> {
  static constexpr std::pair<optim::AdamsForm, std::string_view> values[] = {
      {optim::AdamsForm::ADAMS_FORM_CODE, "code"}, {optim::AdamsForm::ADAMS_FORM_PAPER, "paper"}};
};
}  // namespace gossamer
