#include "util/file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

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

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  std::string contents;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) contents.append(buffer, n);
  const bool failed = std::ferror(file);
  const int error = errno;
  std::fclose(file);
  if (failed) return ErrnoToStatus(error, absl::StrCat("cannot read ", path));
  return contents;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  return WriteFilesAtomically({{path, std::string(contents)}});
}

absl::Status WriteFilesAtomically(const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [path, contents] : files) {  // a directory (or device) in the way fails before any write
    struct stat info;
    if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat("cannot write ", path, ": it exists and is not a file"));
    }
  }
  std::vector<std::string> tmps;  // written and closed so far
  const auto fail = [&tmps](size_t from, absl::Status status) {
    for (size_t i = from; i < tmps.size(); ++i) std::remove(tmps[i].c_str());
    return status;
  };
  for (const auto& [path, contents] : files) {
    const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
    FILE* file = std::fopen(tmp.c_str(), "wb");
    if (file == nullptr) return fail(0, ErrnoToStatus(errno, absl::StrCat("cannot create ", tmp)));
    tmps.push_back(tmp);
    const bool written = std::fwrite(contents.data(), 1, contents.size(), file) == contents.size() &&
                         std::fflush(file) == 0 && fsync(fileno(file)) == 0;
    const int write_error = errno;
    const bool closed = std::fclose(file) == 0;
    if (!written || !closed) {
      return fail(0, ErrnoToStatus(written ? errno : write_error, absl::StrCat("cannot write ", tmp)));
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (std::rename(tmps[i].c_str(), files[i].first.c_str()) != 0) {
      return fail(i, ErrnoToStatus(errno, absl::StrCat("cannot rename ", tmps[i], " to ", files[i].first)));
    }
  }
  return absl::OkStatus();
}

absl::Status CommitTempFile(std::FILE* file, const std::string& tmp, const std::string& path) {
  const bool flushed = std::fflush(file) == 0 && fsync(fileno(file)) == 0;
  const int flush_error = errno;
  const bool closed = std::fclose(file) == 0;
  if (!flushed || !closed) {
    const int error = flushed ? errno : flush_error;
    std::remove(tmp.c_str());
    return ErrnoToStatus(error, absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    return ErrnoToStatus(error, absl::StrCat("cannot rename ", tmp, " to ", path));
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
