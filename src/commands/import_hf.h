// `gossamer import-hf HF_DIR CHECKPOINT_DIR`: a Hugging Face model directory -> one of our
// checkpoint directories. It holds model.safetensors (our layout, as save_checkpoint writes it),
// tokenizer/ (our tokenizer files, when the directory has a tokenizer gossamer loads) and a
// trainer.json at step 0 with a resolved config; it has no optimizer state, so it is a start
// for `train --init-from`, not for --resume. Nothing is written unless the whole directory is.
#pragma once

#include <string>

namespace gossamer::commands {

void import_hf(const std::string& hf_dir, const std::string& checkpoint_dir, bool force);

}  // namespace gossamer::commands
