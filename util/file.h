// File: util/file.h
//
// Whole-file reads and atomic writes. Results files are written to `path.tmp.<pid>` and renamed over
// `path`, so a reader never sees a half-written file, even if the process dies midway.
#ifndef KVSIM_UTIL_FILE_H_
#define KVSIM_UTIL_FILE_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvsim {

// Largest file ReadFile reads unless told otherwise (1 GiB: configs, tables and specs are far smaller).
inline constexpr int64_t kDefaultMaxReadBytes = int64_t{1} << 30;

// Returns the file's bytes. NotFound if it does not exist; FailedPrecondition, before reading anything,
// if it is not a regular file (a directory, a device such as /dev/zero, a pipe: they may never end) or
// is larger than `max_bytes` (also checked while reading, should it grow); PermissionDenied/Internal on
// other failures.
absl::StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes = kDefaultMaxReadBytes);

// Opens `path` for reading (the caller closes it) and sets *size_bytes (unless null); the errors of ReadFile
// before it reads: NotFound, FailedPrecondition for a file that is not regular. For readers that stream a
// file.
absl::StatusOr<std::FILE*> OpenRegularFile(const std::string& path, int64_t* size_bytes = nullptr);

// Removes a UTF-8 byte-order mark (EF BB BF, which some editors write at the start of a text file) from
// the front of *text; true if there was one. Every reader of text files skips it through this.
bool ConsumeUtf8ByteOrderMark(absl::string_view* text);

// Writes `contents` to a temporary file beside `path`, flushes it and renames it over `path`.
// Creates no directories: the parent must exist (FailedPrecondition otherwise).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Writes a set of files (path, contents) that belong together, e.g. one run's results: each to its
// temporary name first (flushed and closed), then each renamed over its path. A failure while writing,
// or a target that exists and is not a regular file (checked first), leaves none of them and no
// temporary file. Only a failing rename, after every write succeeded, can leave the earlier ones renamed.
absl::Status WriteFilesAtomically(const std::vector<std::pair<std::string, std::string>>& files);

// Finishes a file written under a temporary name: flushes and syncs `file`, closes it, and renames `tmp`
// over `path`. `file` is closed in every case; on any failure `tmp` is removed and the error names the
// step that failed. For writers that stream into `tmp` (see WriteFileAtomically for whole contents).
absl::Status CommitTempFile(std::FILE* file, const std::string& tmp, const std::string& path);

// A file streamed under its temporary name `tmp` (TempPathFor(path)), to be renamed over `path`.
struct TempFile {
  std::FILE* file = nullptr;
  std::string tmp;
  std::string path;
};

// CommitTempFile for files that belong together, e.g. one run's results streamed as it goes: first closes
// every one (flushed and synced; every file is closed in every case), then renames each over its path. A
// failure to close one removes every temporary and renames nothing; only a failing rename, after every
// close succeeded, can leave the earlier ones renamed (the later temporaries are then removed).
absl::Status CommitTempFiles(const std::vector<TempFile>& files);

// Opens a TempFile to stream `path` into: its temporary TempPathFor(path) created for writing, the
// destination untouched until CommitTempFile(s). FailedPrecondition if `path` exists and is not a regular
// file (checked first, as WriteFileAtomically does); "cannot create <tmp>: <reason>" if the temporary
// cannot be created (NotFound when the folder does not exist, PermissionDenied, Internal otherwise).
// A writer that fails or is destroyed before committing calls DiscardTempFile.
absl::StatusOr<TempFile> OpenTempFile(const std::string& path);

// Closes file->file if it is open (then null) and removes the temporary, unregistered for signals.
// Does nothing to a TempFile that is not open (never opened, committed or already discarded).
void DiscardTempFile(TempFile* file);

// A file streamed under its temporary name and renamed over its path by Commit(), so a reader never sees
// it half-written: the writers of traces, attention traces, exports and timelines stream through it. A
// StreamedFile destroyed (or discarded) before Commit() leaves neither the temporary nor any change to the
// path behind. Not thread-safe. Example:
//   StreamedFile out;
//   KVSIM_RETURN_IF_ERROR(out.Open(path));
//   KVSIM_RETURN_IF_ERROR(out.Put("a,b\n"));
//   return out.Commit();
class StreamedFile {
 public:
  StreamedFile() = default;
  StreamedFile(const StreamedFile&) = delete;
  StreamedFile& operator=(const StreamedFile&) = delete;
  ~StreamedFile() { Discard(); }

  // OpenTempFile(path); on failure the StreamedFile stays closed. Must not be open.
  absl::Status Open(const std::string& path);
  // Appends `bytes`: FailedPrecondition "<path>: writer closed" when not open, Internal
  // "<tmp>: cannot write: <reason>" on a failed write (the file stays open; Discard or destroy it).
  absl::Status Put(absl::string_view bytes);
  // CommitTempFile: closed afterwards in every case. FailedPrecondition "<path>: closed twice" when not open.
  absl::Status Commit();
  // DiscardTempFile.
  void Discard() { DiscardTempFile(&file_); }

  bool is_open() const { return file_.file != nullptr; }
  const std::string& path() const { return file_.path; }
  const std::string& temp_path() const { return file_.tmp; }
  // The open stream, for writers that seek back (null when not open).
  std::FILE* stream() const { return file_.file; }

 private:
  TempFile file_;
};

// The temporary name `path`.tmp.<pid> under which a writer streams `path` before CommitTempFile renames
// it. The name is registered: if the process is ended by SIGINT or SIGTERM (a handler installed on first
// use, where the signal still has its default action) every registered temporary file is removed before
// the process dies of the signal. CommitTempFile and the atomic writers unregister it.
// A process killed outright (SIGKILL, a crash, power loss) cannot clean up, so the first TempPathFor()
// into a folder in each process also removes the stale temporaries there (RemoveStaleTempFiles with the
// default age), noting each removed file on stderr.
std::string TempPathFor(const std::string& path);

// How long a temporary file must have gone unmodified before RemoveStaleTempFiles takes it for stale.
// The pid check below only speaks for this host's processes; the age keeps a folder shared with another
// host (or another pid namespace) safe for a writer there that is alive and writing.
inline constexpr int64_t kStaleTempMinAgeSeconds = 600;

// Removes from the folder `dir` the temporary files that kvsim runs which died without cleaning up left
// behind, and returns their paths (sorted). A file is taken for such a temporary only if all hold:
//   - its name is <name>.tmp.<pid> (<name> non-empty, <pid> decimal digits), as TempPathFor names them;
//   - it is a regular file (not a link or folder) owned by this user;
//   - <pid> is not this process and no process with that id exists on this host (kill(pid, 0) says
//     ESRCH; a pid reused by a live process keeps the file: the check errs on the side of keeping);
//   - it was last modified at least `min_age_seconds` ago.
// Best effort: an unreadable folder or a file that cannot be removed is left as it is, without an error.
std::vector<std::string> RemoveStaleTempFiles(const std::string& dir,
                                              int64_t min_age_seconds = kStaleTempMinAgeSeconds);

// Removes `tmp` from the temporaries a signal removes (after the writer renamed or removed it itself).
void ForgetTempPath(const std::string& tmp);

// Creates `path` and its missing parents (like `mkdir -p`). OK if it already exists as a directory.
absl::Status MakeDirectories(const std::string& path);

}  // namespace kvsim

#endif  // KVSIM_UTIL_FILE_H_
