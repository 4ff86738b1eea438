// StagingDir: writes a whole output directory (an HF export, an imported checkpoint) so that
// the final path only ever holds a complete result. Files go into a hidden sibling
// ".NAME.tmp-PID"; commit() renames it onto the final path; if commit() is never reached the
// destructor removes the staging directory, so a failure leaves nothing behind.
// Invariant: an existing final path is replaced only when it is an empty directory, or, for a
// command's output, when `force` is set and it holds that command's marker (io/output_guard.h,
// which also refuses runs, checkpoints and locked directories), or, for a training's own
// checkpoint step_N, when it holds trainer.json -- so nothing else can ever be deleted.
#pragma once

#include <string>

namespace gossamer::io {

// A command's output directory (export-hf, import-hf): checked by io::check_replaceable; the
// command's marker (.gossamer-output) is written into it.
struct CommandOutput {
  std::string command;  // "export-hf"
  bool force = false;   // replace an earlier output of the same command
};
// A training's checkpoint directory RUN/checkpoints/step_N: an existing one (an older timeline's
// checkpoint of the same step) is replaced when it holds trainer.json.
struct RunCheckpoint {};

class StagingDir {
 public:
  // Checks the final path (see the invariant; `what` names the argument in errors, e.g.
  // "export-hf: HF_DIR"), creates missing parent directories and the staging directory.
  StagingDir(const std::string& final_dir, const CommandOutput& owner, const std::string& what);
  StagingDir(const std::string& final_dir, RunCheckpoint, const std::string& what);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  const std::string& path() const { return tmp_; }          // write the files here
  const std::string& final_path() const { return final_; }  // where they will appear
  // Writes `bytes` to path()/name (fsynced; name may hold a subdirectory); throws naming the file
  // on any error.
  void write_file(const std::string& name, const std::string& bytes) const;
  // Copies the file `src` to path()/name (fsynced); throws naming both on any error.
  void copy_file(const std::string& src, const std::string& name) const;
  // Fsyncs the staging directory and renames it onto the final path (replacing the old one).
  void commit();

 private:
  // Normalises the final path, creates its parent and the staging directory.
  void create(const std::string& final_dir);

  std::string final_, tmp_, what_;
  bool committed_ = false;
};

}  // namespace gossamer::io
