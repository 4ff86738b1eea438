// Tests of io/atomic_file.h: the final path holds the old content until commit() and the whole
// new content after it; an uncommitted or failed write leaves no temporary file; errors name
// the final path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using gossamer::io::AtomicFile;
using gossamer::testing::expect_error;
using gossamer::testing::TempDir;
using gossamer::testing::temporaries_in;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(AtomicFile, OldContentUntilCommitThenNew) {
  TempDir dir;
  const std::string path = dir.file("f.txt");
  gossamer::io::write_file_atomically(path, "old");
  {
    AtomicFile f(path);
    f.write("new ");
    f.write("content");
    EXPECT_EQ(read(path), "old");  // the final name is untouched while writing
    EXPECT_EQ(temporaries_in(dir.path()).size(), 1u);
    EXPECT_EQ(fs::path(f.temporary_path()).parent_path(), fs::path(dir.path()));
    f.commit();
  }
  EXPECT_EQ(read(path), "new content");
  EXPECT_EQ(temporaries_in(dir.path()), std::vector<std::string>{});
}

TEST(AtomicFile, UncommittedWriteLeavesNothing) {
  TempDir dir;
  const std::string path = dir.file("f.txt");
  {
    AtomicFile f(path);
    f.write("partial");
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(temporaries_in(dir.path()), std::vector<std::string>{});
}

TEST(AtomicFile, ErrorsNameTheFinalPath) {
  TempDir dir;
  const std::string missing = dir.file("no/such/dir/f.txt");
  expect_error([&] { gossamer::io::write_file_atomically(missing, "x"); },
               {missing, "No such file or directory"});
  // rename(2) onto a non-empty directory fails after the data was written.
  const std::string occupied = dir.file("occupied");
  fs::create_directories(occupied + "/child");
  expect_error([&] { gossamer::io::write_file_atomically(occupied, "x"); }, {occupied, "rename"});
  EXPECT_TRUE(fs::is_directory(occupied + "/child"));
  EXPECT_EQ(temporaries_in(dir.path()), std::vector<std::string>{});
  expect_error([&] { gossamer::io::fsync_directory(dir.file("absent")); }, {"absent"});
}

TEST(AtomicFile, ParentDirectory) {
  EXPECT_EQ(gossamer::io::parent_directory("a/b/c.txt"), "a/b");
  EXPECT_EQ(gossamer::io::parent_directory("c.txt"), ".");
  EXPECT_EQ(gossamer::io::parent_directory("/c.txt"), "/");
}

}  // namespace
