#include "util/file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

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

// The id of a process that has exited (forked, reaped): no process has it until the kernel reuses it.
pid_t DeadPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status;
  waitpid(child, &status, 0);
  return child;
}

// Writes `path` (directly: a write through TempPathFor would clean the folder before the test's own
// write does) with a modification time `age_seconds` in the past.
void Plant(const std::string& path, int64_t age_seconds) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  std::fputs("partial", file);
  std::fclose(file);
  struct utimbuf times;
  times.actime = times.modtime = time(nullptr) - age_seconds;
  ASSERT_EQ(utime(path.c_str(), &times), 0) << path;
}

bool Exists(const std::string& path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0;
}

TEST(FileTest, OpenTempFileStreamsUnderTheTemporaryNameUntilCommitted) {
  const std::string dir = TempDir() + "/open_temp";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  const std::string path = dir + "/out.csv";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  absl::StatusOr<TempFile> file = OpenTempFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->path, path);
  EXPECT_EQ(file->tmp, TempPathFor(path));
  ASSERT_GE(std::fputs("new,rows\n", file->file), 0);
  EXPECT_EQ(*ReadFile(path), "old");  // the destination is untouched until the commit
  EXPECT_EQ(CountEntries(dir), 2);
  ASSERT_TRUE(CommitTempFile(file->file, file->tmp, file->path).ok());
  EXPECT_EQ(*ReadFile(path), "new,rows\n");
  EXPECT_EQ(CountEntries(dir), 1);
}

TEST(FileTest, DiscardTempFileRemovesTheTemporaryAndKeepsTheDestination) {
  const std::string dir = TempDir() + "/discard_temp";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  const std::string path = dir + "/out.csv";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  absl::StatusOr<TempFile> file = OpenTempFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_GE(std::fputs("half-written", file->file), 0);
  DiscardTempFile(&*file);
  EXPECT_EQ(file->file, nullptr);
  EXPECT_EQ(*ReadFile(path), "old");
  EXPECT_EQ(CountEntries(dir), 1);
  DiscardTempFile(&*file);  // a second discard does nothing
  EXPECT_EQ(CountEntries(dir), 1);
}

TEST(FileTest, OpenTempFileRefusesAFolderDestinationAndAMissingFolder) {
  const std::string dir = TempDir() + "/open_temp_refusals";
  ASSERT_TRUE(MakeDirectories(dir + "/taken").ok());
  absl::StatusOr<TempFile> folder = OpenTempFile(dir + "/taken");
  EXPECT_EQ(folder.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(folder.status().message().find("it exists and is not a file"), absl::string_view::npos);
  absl::StatusOr<TempFile> missing = OpenTempFile(dir + "/no/such/out.csv");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("cannot create " + dir + "/no/such/out.csv.tmp."), absl::string_view::npos)
      << missing.status();
  EXPECT_EQ(CountEntries(dir), 1);
}

TEST(FileTest, StreamedFileCommitsWhatWasPutAndDiscardsWhenDestroyed) {
  const std::string dir = TempDir() + "/streamed";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  {
    StreamedFile out;
    EXPECT_EQ(out.Put("x").code(), absl::StatusCode::kFailedPrecondition);  // not open
    ASSERT_TRUE(out.Open(dir + "/kept.txt").ok());
    EXPECT_EQ(out.Open(dir + "/other.txt").code(), absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(out.Put("a,").ok());
    ASSERT_TRUE(out.Put(std::string("b\0c", 3)).ok());
    ASSERT_TRUE(out.Commit().ok());
    EXPECT_FALSE(out.is_open());
    absl::Status twice = out.Commit();
    EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(twice.message(), dir + "/kept.txt: closed twice");
  }
  EXPECT_EQ(*ReadFile(dir + "/kept.txt"), std::string("a,b\0c", 5));
  {
    StreamedFile dropped;
    ASSERT_TRUE(dropped.Open(dir + "/dropped.txt").ok());
    ASSERT_TRUE(dropped.Put("partial").ok());
    EXPECT_EQ(CountEntries(dir), 2);
  }
  EXPECT_EQ(CountEntries(dir), 1);  // the uncommitted file left nothing behind
}

TEST(FileTest, StaleTemporariesOfDeadRunsAreRemovedByTheNextWriteIntoTheFolder) {
  const std::string dir = TempDir() + "/stale";
  ASSERT_TRUE(MakeDirectories(dir + "/folder.tmp.1").ok());
  const std::string dead = std::to_string(DeadPid());
  const std::string live = std::to_string(getppid());  // the test runner: alive while we run
  const std::string self = std::to_string(getpid());
  const int64_t old = kStaleTempMinAgeSeconds + 60;
  // Removed: a dead writer's temporaries, of this output and of another one in the same folder.
  Plant(dir + "/out.csv.tmp." + dead, old);
  Plant(dir + "/trace.kvt.tmp." + dead, old);
  // Kept: a live process's, this process's own, a recent one (maybe a live writer on another host),
  // names that are not <name>.tmp.<pid>, a folder of that form.
  Plant(dir + "/other.csv.tmp." + live, old);
  Plant(dir + "/mine.csv.tmp." + self, old);
  Plant(dir + "/recent.csv.tmp." + dead, kStaleTempMinAgeSeconds / 2);
  Plant(dir + "/notes.tmp.v2", old);
  Plant(dir + "/.tmp." + dead, old);
  Plant(dir + "/out.csv.tmp." + dead + "x", old);
  ASSERT_EQ(CountEntries(dir), 9);

  ASSERT_TRUE(WriteFileAtomically(dir + "/out.csv", "done").ok());
  EXPECT_EQ(*ReadFile(dir + "/out.csv"), "done");
  EXPECT_FALSE(Exists(dir + "/out.csv.tmp." + dead));
  EXPECT_FALSE(Exists(dir + "/trace.kvt.tmp." + dead));
  for (const std::string& kept :
       {"/other.csv.tmp." + live, "/mine.csv.tmp." + self, "/recent.csv.tmp." + dead, std::string("/notes.tmp.v2"),
        "/.tmp." + dead, "/out.csv.tmp." + dead + "x", std::string("/folder.tmp.1")}) {
    EXPECT_TRUE(Exists(dir + kept)) << kept;
  }
  EXPECT_EQ(CountEntries(dir), 8);  // 9 - 2 removed + out.csv

  // With no minimum age the recent one goes too; the others stay.
  EXPECT_EQ(RemoveStaleTempFiles(dir, 0), std::vector<std::string>{dir + "/recent.csv.tmp." + dead});
  EXPECT_TRUE(RemoveStaleTempFiles(dir, 0).empty());
  EXPECT_EQ(CountEntries(dir), 7);
}

TEST(FileTest, RemoveStaleTempFilesOfAMissingFolderRemovesNothing) {
  EXPECT_TRUE(RemoveStaleTempFiles(TempDir() + "/no-such-folder", 0).empty());
}

}  // namespace
}  // namespace kvsim
