// File: traces/text/csv_reader.h
//
// CsvReader: RFC 4180 CSV records from a LineReader, streaming. Fields may be quoted ("a, b"), with ""
// standing for one quote, and a quoted field may span lines. The first record is the header; columns are
// looked up by name. A UTF-8 byte-order mark before the header is skipped; blank lines are skipped.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
//   const int tokens = csv->Column("ContextTokens");  // -1 if absent
//   std::vector<absl::string_view> fields;
//   while (csv->Next(&fields)) Use(fields[tokens]);
//   KVSIM_RETURN_IF_ERROR(csv->status());
//
// Thread-safety: one thread at a time.
#ifndef KVSIM_TRACES_TEXT_CSV_READER_H_
#define KVSIM_TRACES_TEXT_CSV_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/text/line_reader.h"

namespace kvsim {

class CsvReader {
 public:
  // Whether a column name may appear twice in the header.
  enum class RepeatedColumns {
    kRefuse,  // an error: a lookup by name would silently take one of them
    kAllow,   // Column() finds the first; for tables that repeat names by design (see sim/report)
  };

  // Opens `path` and reads its header. NotFound if missing; InvalidArgument if it has no header line, or
  // (with kRefuse) a column name, after trimming spaces, appears twice in it:
  // "<path>:<line>:<column>: duplicated column '<name>' (first in column <first>); ...". Unnamed (empty)
  // columns may repeat: no name finds them.
  static absl::StatusOr<std::unique_ptr<CsvReader>> Open(const std::string& path, size_t buffer_bytes = size_t{1} << 20,
                                                         RepeatedColumns repeated = RepeatedColumns::kRefuse);

  // Splits one CSV record held entirely in `text` (no continuation lines) into unquoted fields; used for
  // format detection on a file's first line. False on malformed quoting.
  static bool SplitRecord(absl::string_view text, std::vector<std::string>* fields);

  // Fills `*fields` with the next record's fields (valid until the next call) and returns true; false at
  // the end or on an error. A record whose field count differs from the header's is an error.
  bool Next(std::vector<absl::string_view>* fields);

  // Index of the header column named `name` (exact match after trimming spaces), or -1.
  int Column(absl::string_view name) const;
  const std::vector<std::string>& header() const { return header_; }

  // 1-based line where the record last returned starts ("<path>:<line>" for errors).
  int64_t line_number() const { return record_line_; }
  const std::string& path() const { return lines_->path(); }
  absl::Status status() const { return status_; }

 private:
  explicit CsvReader(std::unique_ptr<LineReader> lines) : lines_(std::move(lines)) {}
  // Reads the next non-blank record into fields_ (views into the line or into unquoted_). False at the
  // end or on error.
  bool ReadRecord();
  bool ParseQuoted(absl::string_view first_line);

  std::unique_ptr<LineReader> lines_;
  std::vector<std::string> header_;
  std::vector<absl::string_view> fields_;
  std::string raw_;       // a quoted record's lines joined by '\n'
  std::string unquoted_;  // its fields, unquoted, back to back
  std::vector<size_t> bounds_;
  int64_t record_line_ = 0;
  absl::Status status_;
};

}  // namespace kvsim

#endif  // KVSIM_TRACES_TEXT_CSV_READER_H_
