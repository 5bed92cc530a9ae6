#include "traces/text/line_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "util/file.h"

namespace kvsim {

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path, size_t buffer_bytes) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const std::string message = absl::StrCat(path, ": cannot open: ", std::strerror(errno));
    if (errno == ENOENT) return absl::NotFoundError(message);
    if (errno == EACCES || errno == EPERM) return absl::PermissionDeniedError(message);
    return absl::InternalError(message);
  }
  // A file smaller than the buffer gets a buffer of its size (plus one byte, to see the end at once).
  struct stat info;
  if (fstat(fileno(file), &info) == 0 && S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) < buffer_bytes) {
    buffer_bytes = static_cast<size_t>(info.st_size) + 1;
  }
  return std::unique_ptr<LineReader>(new LineReader(path, file, buffer_bytes < 16 ? 16 : buffer_bytes));
}

LineReader::LineReader(std::string path, std::FILE* file, size_t buffer_bytes)
    : path_(std::move(path)), file_(file), buffer_(buffer_bytes + kLinePaddingBytes, 0) {}

LineReader::~LineReader() { std::fclose(file_); }

bool LineReader::Refill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    buffer_offset_ += begin_;
    end_ -= begin_;
    begin_ = 0;
  }
  const size_t capacity = buffer_.size() - kLinePaddingBytes;
  if (end_ == capacity) buffer_.resize(2 * capacity + kLinePaddingBytes);  // one very long line
  const size_t want = buffer_.size() - kLinePaddingBytes - end_;
  const size_t got = std::fread(buffer_.data() + end_, 1, want, file_);
  if (got < want) {
    if (std::ferror(file_)) {
      status_ = absl::DataLossError(
          absl::StrCat(path_, ": read error at byte ", buffer_offset_ + end_ + got, ": ", std::strerror(errno)));
      return false;
    }
    eof_ = true;
  }
  end_ += got;
  std::memset(buffer_.data() + end_, 0, kLinePaddingBytes);
  return got > 0;
}

bool LineReader::Next(absl::string_view* line) {
  if (!status_.ok()) return false;
  size_t scanned = begin_;  // bytes before `scanned` hold no '\n'
  while (true) {
    const char* start = buffer_.data() + scanned;
    const void* newline = std::memchr(start, '\n', end_ - scanned);
    if (newline != nullptr || (eof_ && begin_ < end_)) {
      const size_t stop = newline != nullptr ? static_cast<const char*>(newline) - buffer_.data() : end_;
      size_t length = stop - begin_;
      if (length > 0 && buffer_[begin_ + length - 1] == '\r') --length;
      *line = absl::string_view(buffer_.data() + begin_, length);
      line_offset_ = buffer_offset_ + begin_;
      if (line_number_ == 0 && ConsumeUtf8ByteOrderMark(line)) line_offset_ += 3;
      ++line_number_;
      begin_ = newline != nullptr ? stop + 1 : end_;
      return true;
    }
    if (eof_) return false;
    const size_t pending = end_ - begin_;
    if (!Refill() && !status_.ok()) return false;
    scanned = begin_ + pending;  // only the new bytes need scanning
    if (eof_ && begin_ == end_) return false;
  }
}

}  // namespace kvsim
