#include "util/file.h"

#include <dirent.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

int CountEntries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") ++n;
  }
  closedir(d);
  return n;
}

TEST(FileTest, WriteThenReadRoundTripsBytes) {
  const std::string dir = TempDir() + "/roundtrip";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  const std::string path = dir + "/a.bin";
  const std::string bytes("x\0y\nz", 5);
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  absl::StatusOr<std::string> read = ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, bytes);
  // Overwriting replaces the whole file and leaves no temporary file behind.
  ASSERT_TRUE(WriteFileAtomically(path, "short").ok());
  EXPECT_EQ(*ReadFile(path), "short");
  EXPECT_EQ(CountEntries(dir), 1);
}

TEST(FileTest, ConsumeUtf8ByteOrderMarkRemovesOnlyALeadingMark) {
  absl::string_view text = "\xEF\xBB\xBFkind,x";
  EXPECT_TRUE(ConsumeUtf8ByteOrderMark(&text));
  EXPECT_EQ(text, "kind,x");
  EXPECT_FALSE(ConsumeUtf8ByteOrderMark(&text));
  EXPECT_EQ(text, "kind,x");
  absl::string_view inner = "a\xEF\xBB\xBF";
  EXPECT_FALSE(ConsumeUtf8ByteOrderMark(&inner));
  EXPECT_EQ(inner, "a\xEF\xBB\xBF");
  absl::string_view partial = "\xEF\xBB";  // not a whole mark
  EXPECT_FALSE(ConsumeUtf8ByteOrderMark(&partial));
  EXPECT_EQ(partial.size(), 2u);
}

TEST(FileTest, ReadMissingFileIsNotFoundAndNamesThePath) {
  absl::StatusOr<std::string> read = ReadFile(TempDir() + "/no/such/file");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(read.status().message().find("no/such/file"), absl::string_view::npos);
}

TEST(FileTest, ReadRefusesNonRegularFilesAndFilesOverTheLimit) {
  // /dev/zero never ends: read whole it exhausted memory; a directory is no file either.
  absl::StatusOr<std::string> read = ReadFile("/dev/zero");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(read.status().message(), "cannot read /dev/zero: not a regular file");
  EXPECT_EQ(ReadFile(TempDir()).status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string path = TempDir() + "/ten_bytes";
  ASSERT_TRUE(WriteFileAtomically(path, "0123456789").ok());
  EXPECT_EQ(*ReadFile(path, 10), "0123456789");
  read = ReadFile(path, 9);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(read.status().message().find("larger than the limit of 9 bytes"), absl::string_view::npos);
}

TEST(FileTest, WriteIntoMissingDirectoryFailsWithoutCreatingIt) {
  const std::string path = TempDir() + "/missing_dir/out.txt";
  EXPECT_EQ(WriteFileAtomically(path, "x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CountEntries(TempDir() + "/missing_dir"), -1);
}

TEST(FileTest, MakeDirectoriesCreatesParentsAndRejectsFiles) {
  const std::string dir = TempDir() + "/p/q/r";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  ASSERT_TRUE(MakeDirectories(dir).ok());  // idempotent
  ASSERT_TRUE(WriteFileAtomically(dir + "/f", "x").ok());
  EXPECT_EQ(MakeDirectories(dir + "/f/g").code(), absl::StatusCode::kFailedPrecondition);
}

TEST(FileTest, WriteFilesAtomicallyWritesAllOrNone) {
  const std::string dir = TempDir() + "/set";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  ASSERT_TRUE(WriteFilesAtomically({{dir + "/a", "1"}, {dir + "/b", "22"}}).ok());
  EXPECT_EQ(*ReadFile(dir + "/a"), "1");
  EXPECT_EQ(*ReadFile(dir + "/b"), "22");
  // A directory where the last file should go: refused before anything is written or replaced.
  ASSERT_TRUE(MakeDirectories(dir + "/c").ok());
  absl::Status s = WriteFilesAtomically({{dir + "/a", "new"}, {dir + "/b", "new"}, {dir + "/c", "x"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(dir + "/c"), std::string::npos) << s;
  EXPECT_EQ(*ReadFile(dir + "/a"), "1");
  EXPECT_EQ(*ReadFile(dir + "/b"), "22");
  // A file that cannot be created (its directory is missing): the ones written before it are removed.
  s = WriteFilesAtomically({{dir + "/a", "new"}, {dir + "/missing/d", "x"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*ReadFile(dir + "/a"), "1");
  EXPECT_EQ(CountEntries(dir), 3);  // a, b, c: no temporary file left
}

}  // namespace
}  // namespace kvsim
