// `gossamer export-hf CHECKPOINT HF_DIR`: a checkpoint (or a run directory's latest) -> a
// Hugging Face model directory (hf/export.h says what it holds). The tokenizer is checked before
// the first byte is written.
#pragma once

#include <string>

namespace gossamer::commands {

struct HfExportOptions {
  std::string tokenizer;      // tokenizer spec; "" = the checkpoint's data.tokenizer
  bool no_tokenizer = false;  // write no tokenizer files
  bool force = false;         // replace an existing export (a directory holding config.json)
};

// CHECKPOINT is a checkpoint directory or a run directory (its latest checkpoint).
void export_hf(const std::string& checkpoint, const std::string& hf_dir,
               const HfExportOptions& options);

}  // namespace gossamer::commands
