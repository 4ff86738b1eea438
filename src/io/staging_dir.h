// StagingDir: writes a whole output directory (an HF export, an imported checkpoint) so that
// the final path only ever holds a complete result. Files go into a hidden sibling
// ".NAME.tmp-PID"; commit() renames it onto the final path; if commit() is never reached the
// destructor removes the staging directory, so a failure leaves nothing behind.
// Invariant: an existing final path is replaced only when it is an empty directory, or when
// `force` is set and it holds the `marker` file (config.json of an HF export, trainer.json of a
// checkpoint) -- so --force can never delete an unrelated directory.
#pragma once

#include <string>

namespace gossamer::io {

class StagingDir {
 public:
  // Checks the final path (see the invariant; `what` names the argument in errors, e.g.
  // "export-hf: HF_DIR"), creates missing parent directories and the staging directory.
  StagingDir(const std::string& final_dir, bool force, const std::string& marker,
             const std::string& what);
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
  std::string final_, tmp_, what_;
  bool committed_ = false;
};

}  // namespace gossamer::io
