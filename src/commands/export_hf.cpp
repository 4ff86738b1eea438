// `gossamer export-hf` (see export_hf.h): the checkpoint's model and tokenizer, then
// hf::export_hf_model.
#include "commands/export_hf.h"

#include "core/error.h"
#include "core/log.h"
#include "hf/export.h"
#include "kernels/ops.h"
#include "run/checkpoint.h"
#include "run/run_config.h"

namespace gossamer::commands {

void export_hf(const std::string& checkpoint, const std::string& hf_dir,
               const HfExportOptions& options) {
  GOSSAMER_CHECK(!options.no_tokenizer || options.tokenizer.empty(),
                 "export-hf: --tokenizer and --no-tokenizer exclude each other");
  const std::string ckpt = run::resolve_checkpoint(checkpoint);
  const run::RunConfig config =
      run::parse_run_config(run::load_checkpoint_config(ckpt), ckpt + "/trainer.json");
  auto model = model::make_model(config.model, 1, 1, kernels::cpu_ops());
  run::load_model_weights(ckpt, *model);
  std::string spec;
  if (!options.no_tokenizer) {
    spec = options.tokenizer.empty() ? config.data.tokenizer : options.tokenizer;
    GOSSAMER_CHECK(!spec.empty(),
                   "%s/trainer.json: data.tokenizer is empty (an import without tokenizer?): "
                   "pass --tokenizer SPEC or --no-tokenizer",
                   ckpt.c_str());
  }
  log_info("export-hf: %s -> %s", ckpt.c_str(), hf_dir.c_str());
  hf::export_hf_model(*model, spec, hf_dir, options.force);
}

}  // namespace gossamer::commands
