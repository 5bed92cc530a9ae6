#include "util/file.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::Status ErrnoToStatus(int error, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOTDIR:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

// Registered temporary files, for the signal handler: fixed storage (no allocation in the handler), each
// slot free (0), being filled (1) or holding a path (2).
constexpr int kTempSlots = 64;
constexpr size_t kTempPathBytes = 4096;
char temp_paths[kTempSlots][kTempPathBytes];
std::atomic<int> temp_state[kTempSlots];

// Async-signal-safe: unlink, signal and raise only.
void RemoveTempFilesAndDie(int signal_number) {
  for (int i = 0; i < kTempSlots; ++i) {
    if (temp_state[i].load() == 2) unlink(temp_paths[i]);
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void InstallTempFileHandlers() {
  for (int signal_number : {SIGINT, SIGTERM}) {
    struct sigaction current;
    if (sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      struct sigaction action = {};
      action.sa_handler = RemoveTempFilesAndDie;
      sigemptyset(&action.sa_mask);
      sigaction(signal_number, &action, nullptr);
    }
  }
}

// The folder holding `path` ("." for a bare name).
std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The pid in a name <name>.tmp.<pid>, or 0 if the name is not of that form.
pid_t TempFilePid(absl::string_view name) {
  const size_t at = name.rfind(".tmp.");
  if (at == absl::string_view::npos || at == 0) return 0;
  const absl::string_view digits = name.substr(at + 5);
  if (digits.empty() || digits.size() > 10) return 0;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return 0;
  }
  int64_t pid = 0;
  if (!absl::SimpleAtoi(digits, &pid) || pid <= 0 || pid > INT32_MAX) return 0;
  return static_cast<pid_t>(pid);
}

// Cleans each folder once per process: the first temporary written into it.
void RemoveStaleTempFilesOnce(const std::string& path) {
  static std::mutex mutex;
  static auto* cleaned = new absl::flat_hash_set<std::string>();
  const std::string dir = FolderOf(path);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!cleaned->insert(dir).second) return;
  }
  for (const std::string& removed : RemoveStaleTempFiles(dir)) {
    std::fprintf(stderr, "note: removed %s, a temporary file left by a kvsim run that is no longer running\n",
                 removed.c_str());
  }
}

}  // namespace

std::vector<std::string> RemoveStaleTempFiles(const std::string& dir, int64_t min_age_seconds) {
  std::vector<std::string> removed;
  DIR* folder = opendir(dir.c_str());
  if (folder == nullptr) return removed;
  const pid_t self = getpid();
  const uid_t user = geteuid();
  const time_t now = time(nullptr);
  while (const dirent* entry = readdir(folder)) {
    const pid_t pid = TempFilePid(entry->d_name);
    if (pid == 0 || pid == self) continue;
    const std::string path = dir == "/" ? absl::StrCat("/", entry->d_name) : absl::StrCat(dir, "/", entry->d_name);
    struct stat info;
    if (lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != user) continue;
    if (now - info.st_mtime < min_age_seconds) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to signal: alive too)
    if (unlink(path.c_str()) == 0) removed.push_back(path);
  }
  closedir(folder);
  std::sort(removed.begin(), removed.end());
  return removed;
}

std::string TempPathFor(const std::string& path) {
  static std::once_flag installed;
  std::call_once(installed, InstallTempFileHandlers);
  RemoveStaleTempFilesOnce(path);
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  if (tmp.size() >= kTempPathBytes) return tmp;  // too long to register (the OS refuses it anyway)
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (temp_state[i].compare_exchange_strong(expected, 1)) {
      std::memcpy(temp_paths[i], tmp.c_str(), tmp.size() + 1);
      temp_state[i].store(2);
      break;
    }
  }
  return tmp;
}

void ForgetTempPath(const std::string& tmp) {
  for (int i = 0; i < kTempSlots; ++i) {
    if (temp_state[i].load() == 2 && tmp == temp_paths[i]) {
      int expected = 2;
      temp_state[i].compare_exchange_strong(expected, 0);
      return;
    }
  }
}

bool ConsumeUtf8ByteOrderMark(absl::string_view* text) { return absl::ConsumePrefix(text, "\xEF\xBB\xBF"); }

absl::StatusOr<std::FILE*> OpenRegularFile(const std::string& path, int64_t* size_bytes) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  struct stat info;
  if (fstat(fileno(file), &info) != 0) {
    const int error = errno;
    std::fclose(file);
    return ErrnoToStatus(error, absl::StrCat("cannot read ", path));
  }
  if (!S_ISREG(info.st_mode)) {
    std::fclose(file);
    return absl::FailedPreconditionError(absl::StrCat("cannot read ", path, ": not a regular file"));
  }
  if (size_bytes != nullptr) *size_bytes = static_cast<int64_t>(info.st_size);
  return file;
}

absl::StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes) {
  int64_t size_bytes = 0;
  KVSIM_ASSIGN_OR_RETURN(FILE* file, OpenRegularFile(path, &size_bytes));
  const auto too_large = [&]() {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", path, ": larger than the limit of ", max_bytes, " bytes"));
  };
  if (size_bytes > max_bytes) {
    std::fclose(file);
    return too_large();
  }
  std::string contents;
  contents.reserve(static_cast<size_t>(size_bytes));
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    if (static_cast<int64_t>(contents.size() + n) > max_bytes) {
      std::fclose(file);
      return too_large();
    }
    contents.append(buffer, n);
  }
  const bool failed = std::ferror(file);
  const int error = errno;
  std::fclose(file);
  if (failed) return ErrnoToStatus(error, absl::StrCat("cannot read ", path));
  return contents;
}

namespace {

// Flushes, syncs and closes `file` (closed in every case), written under the name `tmp`; removes `tmp` on
// failure.
absl::Status CloseTempFile(std::FILE* file, const std::string& tmp) {
  const bool flushed = std::fflush(file) == 0 && fsync(fileno(file)) == 0;
  const int flush_error = errno;
  const bool closed = std::fclose(file) == 0;
  if (!flushed || !closed) {
    const int error = flushed ? errno : flush_error;
    ForgetTempPath(tmp);
    std::remove(tmp.c_str());
    return ErrnoToStatus(error, absl::StrCat("cannot write ", tmp));
  }
  return absl::OkStatus();
}

// Renames `tmp` over `path`; removes `tmp` on failure.
absl::Status RenameTempFile(const std::string& tmp, const std::string& path) {
  ForgetTempPath(tmp);  // renamed or removed below
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    return ErrnoToStatus(error, absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

// Writes `contents` to a temporary file beside `path`, flushed and closed, and sets *tmp to its name;
// leaves no file on failure.
absl::Status WriteTempFile(const std::string& path, absl::string_view contents, std::string* tmp) {
  *tmp = TempPathFor(path);
  FILE* file = std::fopen(tmp->c_str(), "wb");
  if (file == nullptr) return ErrnoToStatus(errno, absl::StrCat("cannot create ", *tmp));
  if (std::fwrite(contents.data(), 1, contents.size(), file) != contents.size()) {
    const int error = errno;
    std::fclose(file);
    std::remove(tmp->c_str());
    return ErrnoToStatus(error, absl::StrCat("cannot write ", *tmp));
  }
  return CloseTempFile(file, *tmp);
}

// FailedPrecondition if `path` exists and is not a regular file (a directory or device in the way).
absl::Status CheckReplaceable(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("cannot write ", path, ": it exists and is not a file"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TempFile> OpenTempFile(const std::string& path) {
  KVSIM_RETURN_IF_ERROR(CheckReplaceable(path));
  TempFile file;
  file.path = path;
  file.tmp = TempPathFor(path);
  file.file = std::fopen(file.tmp.c_str(), "wb");
  if (file.file == nullptr) {
    const int error = errno;
    ForgetTempPath(file.tmp);
    return ErrnoToStatus(error, absl::StrCat("cannot create ", file.tmp));
  }
  return file;
}

void DiscardTempFile(TempFile* file) {
  if (file->file == nullptr) return;
  std::fclose(file->file);
  file->file = nullptr;
  ForgetTempPath(file->tmp);
  std::remove(file->tmp.c_str());
}

absl::Status StreamedFile::Open(const std::string& path) {
  if (is_open()) return absl::FailedPreconditionError(absl::StrCat(file_.path, ": opened twice"));
  KVSIM_ASSIGN_OR_RETURN(file_, OpenTempFile(path));
  return absl::OkStatus();
}

absl::Status StreamedFile::Put(absl::string_view bytes) {
  if (!is_open()) return absl::FailedPreconditionError(absl::StrCat(file_.path, ": writer closed"));
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_.file) != bytes.size()) {
    return absl::InternalError(absl::StrCat(file_.tmp, ": cannot write: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status StreamedFile::Commit() {
  if (!is_open()) return absl::FailedPreconditionError(absl::StrCat(file_.path, ": closed twice"));
  std::FILE* file = file_.file;
  file_.file = nullptr;
  return CommitTempFile(file, file_.tmp, file_.path);
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  KVSIM_RETURN_IF_ERROR(CheckReplaceable(path));
  std::string tmp;
  KVSIM_RETURN_IF_ERROR(WriteTempFile(path, contents, &tmp));
  return RenameTempFile(tmp, path);
}

absl::Status WriteFilesAtomically(const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& file : files) KVSIM_RETURN_IF_ERROR(CheckReplaceable(file.first));
  std::vector<std::string> tmps(files.size());  // tmps[0, i) written when file i fails
  const auto remove_from = [&tmps](size_t first, size_t end) {
    for (size_t i = first; i < end; ++i) std::remove(tmps[i].c_str());
  };
  for (size_t i = 0; i < files.size(); ++i) {
    if (absl::Status s = WriteTempFile(files[i].first, files[i].second, &tmps[i]); !s.ok()) {
      remove_from(0, i);
      return s;
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (absl::Status s = RenameTempFile(tmps[i], files[i].first); !s.ok()) {
      remove_from(i + 1, files.size());
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status CommitTempFile(std::FILE* file, const std::string& tmp, const std::string& path) {
  KVSIM_RETURN_IF_ERROR(CloseTempFile(file, tmp));
  return RenameTempFile(tmp, path);
}

absl::Status CommitTempFiles(const std::vector<TempFile>& files) {
  absl::Status closed = absl::OkStatus();
  for (const TempFile& f : files) {
    if (absl::Status s = CloseTempFile(f.file, f.tmp); !s.ok() && closed.ok()) closed = s;
  }
  const auto remove_from = [&files](size_t first) {
    for (size_t i = first; i < files.size(); ++i) {
      ForgetTempPath(files[i].tmp);
      std::remove(files[i].tmp.c_str());
    }
  };
  if (!closed.ok()) {
    remove_from(0);
    return closed;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (absl::Status s = RenameTempFile(files[i].tmp, files[i].path); !s.ok()) {
      remove_from(i + 1);
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status MakeDirectories(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("empty directory path");
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/') continue;
    const std::string prefix = path.substr(0, i);
    struct stat info;
    if (stat(prefix.c_str(), &info) == 0) {
      if (!S_ISDIR(info.st_mode)) {
        return absl::FailedPreconditionError(absl::StrCat(prefix, " exists and is not a directory"));
      }
      continue;
    }
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, absl::StrCat("cannot create directory ", prefix));
    }
  }
  return absl::OkStatus();
}

}  // namespace kvsim
