// File: traces/text/csv_source.h
//
// CsvSource: the RecordSource shared by the CSV importers (Azure, BurstGPT, Vidur). It reads records
// with CsvReader (quoting handled there), finds the format's columns by name once, and hands each record
// to the format's ParseFields(). Errors read "<path>:<line>: <column>: <what was expected>, got '<text>'".
//
// Example (a format's source):
//   class MySource final : public CsvSource {
//     absl::Status ParseFields(absl::Span<const absl::string_view> f, Request* r) override {
//       return CsvInt(f, tokens_column_, "ContextTokens", 0, &r->input_tokens);
//     }
//
// Thread-safety: one thread at a time.
#ifndef KVSIM_TRACES_TEXT_CSV_SOURCE_H_
#define KVSIM_TRACES_TEXT_CSV_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "traces/request.h"
#include "traces/text/csv_reader.h"
#include "traces/text/import_reader.h"

namespace kvsim {

class CsvSource : public RecordSource {
 public:
  explicit CsvSource(std::unique_ptr<CsvReader> csv) : csv_(std::move(csv)) {}

  bool Next(Request* request) final;
  absl::Status status() const final { return status_; }
  std::string position() const final;

 protected:
  // Fills `*request` (already cleared) from one record; arrival_ns = the source's timestamp in ns.
  // Returns InvalidArgument "<column>: <expected>, got ..." (CsvSource adds "<path>:<line>: ").
  virtual absl::Status ParseFields(absl::Span<const absl::string_view> fields, Request* request) = 0;

  // The index of the required column `name`, or InvalidArgument "<path>:1: expected a column <name>".
  absl::StatusOr<int> RequiredColumn(absl::string_view name) const;
  // The index of column `name`, or -1.
  int OptionalColumn(absl::string_view name) const { return csv_->Column(name); }
  const std::string& path() const { return csv_->path(); }

 private:
  std::unique_ptr<CsvReader> csv_;
  std::vector<absl::string_view> fields_;
  absl::Status status_;
};

// The error "<column>: expected <expected>, got '<text>'".
absl::Status CsvFieldError(absl::string_view column, absl::string_view expected, absl::string_view text);

// An integer in [min_value, max_value] from `text`.
absl::Status CsvInt(absl::string_view text, absl::string_view column, int64_t min_value, int64_t max_value,
                    int64_t* out);

// A decimal number of units worth `scale_ns` ns each (1e9 for seconds), exactly, as ns.
absl::Status CsvDecimalNs(absl::string_view text, absl::string_view column, int64_t scale_ns, int64_t* ns);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TEXT_CSV_SOURCE_H_
