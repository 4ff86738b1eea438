// AtomicFile (see atomic_file.h): temporary sibling, write loop, fsync, rename, directory fsync.
#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.h"

namespace gossamer::io {

std::string parent_directory(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  GOSSAMER_CHECK(fd >= 0, "%s: cannot open the directory to sync it: %s", dir.c_str(),
                 std::strerror(errno));
  const bool ok = ::fsync(fd) == 0 || errno == EINVAL;
  const int err = errno;
  ::close(fd);
  GOSSAMER_CHECK(ok, "%s: fsync of the directory failed: %s", dir.c_str(), std::strerror(err));
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  GOSSAMER_CHECK(!path_.empty(), "cannot write a file with an empty name");
  const std::filesystem::path p(path_);
  tmp_ =
      (p.parent_path() / strprintf(".%s.tmp-%d", p.filename().c_str(), int(::getpid()))).string();
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  GOSSAMER_CHECK(fd_ >= 0, "%s: cannot create the temporary file %s: %s", path_.c_str(),
                 tmp_.c_str(), std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t bytes) {
  GOSSAMER_CHECK(fd_ >= 0 && !committed_, "%s: write after commit", path_.c_str());
  const auto* p = static_cast<const unsigned char*>(data);
  while (bytes > 0) {
    const size_t chunk = std::min<size_t>(bytes, size_t{1} << 30);
    const ssize_t w = ::write(fd_, p, chunk);
    if (w < 0 && errno == EINTR) continue;
    GOSSAMER_CHECK(w > 0, "%s: cannot write %s: %s", path_.c_str(), tmp_.c_str(),
                   w < 0 ? std::strerror(errno) : "no progress");
    p += w;
    bytes -= size_t(w);
  }
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t bytes) {
  GOSSAMER_CHECK(fd_ >= 0 && !committed_, "%s: write after commit", path_.c_str());
  const auto* p = static_cast<const unsigned char*>(data);
  while (bytes > 0) {
    const ssize_t w = ::pwrite(fd_, p, std::min<size_t>(bytes, size_t{1} << 30), off_t(offset));
    if (w < 0 && errno == EINTR) continue;
    GOSSAMER_CHECK(w > 0, "%s: cannot write %s: %s", path_.c_str(), tmp_.c_str(),
                   w < 0 ? std::strerror(errno) : "no progress");
    p += w;
    offset += uint64_t(w);
    bytes -= size_t(w);
  }
}

void AtomicFile::commit() {
  GOSSAMER_CHECK(fd_ >= 0 && !committed_, "%s: committed twice", path_.c_str());
  GOSSAMER_CHECK(::fsync(fd_) == 0, "%s: fsync of %s failed: %s", path_.c_str(), tmp_.c_str(),
                 std::strerror(errno));
  const int fd = std::exchange(fd_, -1);
  GOSSAMER_CHECK(::close(fd) == 0, "%s: cannot close %s: %s", path_.c_str(), tmp_.c_str(),
                 std::strerror(errno));
  GOSSAMER_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, "%s: cannot rename %s onto it: %s",
                 path_.c_str(), tmp_.c_str(), std::strerror(errno));
  committed_ = true;
  fsync_directory(parent_directory(path_));
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace gossamer::io
