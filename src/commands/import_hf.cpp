// `gossamer import-hf` (see import_hf.h): read and check the HF directory, then stage and
// commit the checkpoint directory.
#include "commands/import_hf.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/timer.h"
#include "hf/hf_weights.h"
#include "hf/tokenizer_files.h"
#include "io/staging_dir.h"
#include "kernels/ops.h"
#include "model/host_params.h"
#include "run/checkpoint.h"
#include "run/run_config.h"

namespace gossamer::commands {

namespace fs = std::filesystem;
using nlohmann::json;

void import_hf(const std::string& hf_dir, const std::string& checkpoint_dir, bool force) {
  Stopwatch watch;
  const hf::HfModelSpec spec = hf::read_hf_model_spec(hf_dir);
  const hf::HfTokenizerSource tok = hf::find_hf_tokenizer(hf_dir);
  auto model = model::make_model(spec.config, 1, 1, kernels::cpu_ops());
  hf::load_hf_weights(hf_dir, spec, *model);
  const double t_read = watch.seconds();

  io::StagingDir out(checkpoint_dir, io::CommandOutput{"import-hf", force},
                     "import-hf: CHECKPOINT_DIR");
  run::RunConfig rc;
  rc.model = model->config();
  rc.data.tokenizer = hf::import_hf_tokenizer(tok, out, "tokenizer");
  rc.data.seq_len = std::min(rc.data.seq_len, rc.model.max_seq_len);
  rc.validate();
  const json resolved = to_json(rc);

  run::write_model_weights(out.path() + "/model.safetensors", model->layout(),
                           model::HostParamsView(*model).span(), resolved, /*step=*/0);
  json trainer = run::trainer_state_json(run::initial_trainer_state(rc.train.seed), resolved);
  trainer["imported_from"] = fs::absolute(hf_dir).lexically_normal().string();
  out.write_file("trainer.json", trainer.dump(2) + "\n");
  out.commit();
  if (tok.kind.empty())
    log_warn("import-hf: %s has no tokenizer gossamer loads; data.tokenizer is left empty",
             hf_dir.c_str());
  log_info("import-hf: wrote %s (%s, %zu parameters, tokenizer %s) in %.2f s (reading %.2f s)",
           out.final_path().c_str(), hf::describe_hf_model(spec).c_str(), model->layout().total(),
           rc.data.tokenizer.empty() ? "none" : rc.data.tokenizer.c_str(), watch.seconds(), t_read);
}

}  // namespace gossamer::commands
