// Atomic, durable file writes: the one helper behind every file gossamer writes (run
// directories, checkpoints, sweep files, token shards, tokenizer models, safetensors, Hugging
// Face exports). AtomicFile writes into a temporary file next to the final path
// (".NAME.tmp-PID" in the same directory), and commit() fsyncs it, renames it onto the final
// name and fsyncs the directory. Destroying an uncommitted AtomicFile removes the temporary
// file. Errors throw gossamer::Error naming the final path, the step and strerror.
// Invariant: the final path holds either its previous content or the complete new content,
// also after a crash or a power loss once commit() has returned; no temporary file outlives
// its AtomicFile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gossamer::io {

class AtomicFile {
 public:
  // Creates the temporary file (the directory must exist).
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // Overwrites bytes already written at `offset` (a header completed after its data).
  void write_at(uint64_t offset, const void* data, size_t bytes);
  // fsync, close, rename onto path(), fsync of the directory. Call once.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temporary_path() const { return tmp_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole file in one call: AtomicFile(path), write(bytes), commit().
void write_file_atomically(const std::string& path, std::string_view bytes);

// fsync of a directory, so that renames and new entries in it are durable. Throws naming the
// directory when it cannot be opened or synced (file systems that refuse fsync on directories
// with EINVAL are accepted).
void fsync_directory(const std::string& dir);

// The directory part of a path ("." for a bare file name).
std::string parent_directory(const std::string& path);

}  // namespace gossamer::io
