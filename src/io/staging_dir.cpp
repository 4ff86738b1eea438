// Implementation of StagingDir (see staging_dir.h): checks, hidden sibling, rename on commit.
#include "io/staging_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/output_guard.h"

namespace gossamer::io {

namespace fs = std::filesystem;

StagingDir::StagingDir(const std::string& final_dir, const CommandOutput& owner,
                       const std::string& what)
    : what_(what) {
  GOSSAMER_CHECK(!final_dir.empty(), "%s: empty path", what.c_str());
  check_replaceable(final_dir, owner.command, owner.force, what);
  create(final_dir);
  write_file(kOutputMarker, output_marker(owner.command));
}

StagingDir::StagingDir(const std::string& final_dir, RunCheckpoint, const std::string& what)
    : what_(what) {
  GOSSAMER_CHECK(!final_dir.empty(), "%s: empty path", what.c_str());
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(final_dir, ec);
  if (fs::exists(st)) {
    GOSSAMER_CHECK(fs::is_directory(st), "%s: %s exists and is not a directory", what.c_str(),
                   final_dir.c_str());
    GOSSAMER_CHECK(fs::is_empty(final_dir, ec) || fs::exists(fs::path(final_dir) / "trainer.json"),
                   "%s: %s is not empty and holds no trainer.json: refusing to replace it",
                   what.c_str(), final_dir.c_str());
  }
  create(final_dir);
}

void StagingDir::create(const std::string& final_dir) {
  fs::path final_path = fs::path(final_dir).lexically_normal();
  if (!final_path.has_filename()) final_path = final_path.parent_path();  // "out/" -> "out"
  final_ = final_path.string();
  std::error_code ec;
  fs::path parent = final_path.parent_path();
  if (parent.empty()) parent = ".";
  fs::create_directories(parent, ec);
  GOSSAMER_CHECK(!ec && fs::is_directory(parent), "%s: cannot create directory %s: %s",
                 what_.c_str(), parent.c_str(),
                 ec ? ec.message().c_str() : "a path component is not a directory");
  tmp_ =
      (parent / strprintf(".%s.tmp-%d", final_path.filename().c_str(), int(::getpid()))).string();
  fs::remove_all(tmp_, ec);
  fs::create_directory(tmp_, ec);
  GOSSAMER_CHECK(!ec, "%s: cannot create %s: %s", what_.c_str(), tmp_.c_str(),
                 ec.message().c_str());
}

StagingDir::~StagingDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

void StagingDir::write_file(const std::string& name, const std::string& bytes) const {
  const fs::path full = fs::path(tmp_) / name;
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);  // "tokenizer/encoder.json"
  try {
    write_file_atomically(full.string(), bytes);
  } catch (const Error& e) {
    fail("%s: %s", what_.c_str(), e.what());
  }
}

void StagingDir::copy_file(const std::string& src, const std::string& name) const {
  std::ifstream in(src, std::ios::binary);
  GOSSAMER_CHECK(in.good(), "%s: cannot open %s: %s", what_.c_str(), src.c_str(),
                 std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  GOSSAMER_CHECK(!in.bad(), "%s: cannot read %s", what_.c_str(), src.c_str());
  write_file(name, bytes);
}

void StagingDir::commit() {
  GOSSAMER_CHECK(!committed_, "%s: %s committed twice", what_.c_str(), final_.c_str());
  fsync_directory(tmp_);
  const fs::path final_path(final_);
  std::error_code ec;
  fs::path old;
  if (fs::exists(fs::symlink_status(final_path, ec))) {
    // Empty, or replaceable as the constructor checked: move it aside first.
    old = final_path.parent_path() /
          strprintf(".%s.old-%d", final_path.filename().c_str(), int(::getpid()));
    fs::remove_all(old, ec);
    fs::rename(final_path, old, ec);
    GOSSAMER_CHECK(!ec, "%s: cannot move the existing %s aside: %s", what_.c_str(), final_.c_str(),
                   ec.message().c_str());
  }
  fs::rename(tmp_, final_path, ec);
  if (ec) {
    const std::string msg = ec.message();
    if (!old.empty()) fs::rename(old, final_path, ec);  // put the old one back
    fail("%s: cannot rename %s onto %s: %s", what_.c_str(), tmp_.c_str(), final_.c_str(),
         msg.c_str());
  }
  committed_ = true;
  fsync_directory(parent_directory(final_));
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace gossamer::io
