// File: traces/text/line_reader.h
//
// LineReader: reads a text file line by line through one fixed-size buffer, so memory stays flat however
// long the file is (only a single line longer than the buffer makes it grow). Every returned line is
// followed in memory by at least kLinePaddingBytes readable bytes, which is what simdjson needs to parse
// the line in place without copying it.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
//   absl::string_view line;
//   while (lines->Next(&line)) Parse(line, lines->line_number());
//   KVSIM_RETURN_IF_ERROR(lines->status());
//
// Lines end at '\n'; a trailing '\r' is removed; the last line may lack its '\n'.
// Thread-safety: one thread at a time.
#ifndef KVSIM_TRACES_TEXT_LINE_READER_H_
#define KVSIM_TRACES_TEXT_LINE_READER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvsim {

// Readable bytes after the end of every line LineReader returns (>= SIMDJSON_PADDING, which is 64).
inline constexpr size_t kLinePaddingBytes = 64;

class LineReader {
 public:
  // NotFound if `path` does not exist; PermissionDenied/Internal on other failures to open it.
  // `buffer_bytes`: size of the read buffer (tests use tiny ones to exercise refills).
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path,
                                                          size_t buffer_bytes = size_t{1} << 20);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets `*line` to the next line (valid until the next call) and returns true; false at the end of the
  // file or on a read error (then status() is not OK). A UTF-8 byte-order mark before the first line is
  // not part of it.
  bool Next(absl::string_view* line);

  // 1-based number of the line last returned by Next(); 0 before the first.
  int64_t line_number() const { return line_number_; }
  // Byte offset in the file of the start of the line last returned.
  uint64_t line_offset() const { return line_offset_; }
  const std::string& path() const { return path_; }
  absl::Status status() const { return status_; }

 private:
  LineReader(std::string path, std::FILE* file, size_t buffer_bytes);
  // Moves the unread bytes to the front and reads more; grows the buffer if it is full. False at EOF.
  bool Refill();

  std::string path_;
  std::FILE* file_;
  std::vector<char> buffer_;  // data in [begin_, end_), then >= kLinePaddingBytes zero bytes
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  uint64_t buffer_offset_ = 0;  // file offset of buffer_[0]
  int64_t line_number_ = 0;
  uint64_t line_offset_ = 0;
  absl::Status status_;
};

}  // namespace kvsim

#endif  // KVSIM_TRACES_TEXT_LINE_READER_H_
