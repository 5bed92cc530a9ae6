#include "traces/text/csv_source.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "traces/text/parse_util.h"

namespace kvsim {

bool CsvSource::Next(Request* request) {
  if (!status_.ok()) return false;
  if (!csv_->Next(&fields_)) {
    status_ = csv_->status();
    return false;
  }
  request->Clear();
  const absl::Status status = ParseFields(fields_, request);
  if (!status.ok()) {
    status_ = absl::Status(status.code(), absl::StrCat(position(), ": ", status.message()));
    return false;
  }
  return true;
}

std::string CsvSource::position() const { return absl::StrCat(csv_->path(), ":", csv_->line_number()); }

absl::StatusOr<int> CsvSource::RequiredColumn(absl::string_view name) const {
  const int column = csv_->Column(name);
  if (column < 0) {
    return absl::InvalidArgumentError(absl::StrCat(csv_->path(), ":1: expected a column '", name,
                                                   "' in the header, found: ", absl::StrJoin(csv_->header(), ",")));
  }
  return column;
}

absl::Status CsvFieldError(absl::string_view column, absl::string_view expected, absl::string_view text) {
  if (text.size() > 60) text = text.substr(0, 60);
  return absl::InvalidArgumentError(absl::StrCat(column, ": expected ", expected, ", got '", text, "'"));
}

absl::Status CsvInt(absl::string_view text, absl::string_view column, int64_t min_value, int64_t max_value,
                    int64_t* out) {
  int64_t value;
  if (!ParseInt64(text, &value) || value < min_value || value > max_value) {
    return CsvFieldError(column, absl::StrCat("an integer in [", min_value, ", ", max_value, "]"), text);
  }
  *out = value;
  return absl::OkStatus();
}

absl::Status CsvDecimalNs(absl::string_view text, absl::string_view column, int64_t scale_ns, int64_t* ns) {
  if (!ParseDecimalToNs(text, scale_ns, ns)) {
    return CsvFieldError(column, "a decimal number (e.g. 12.5)", text);
  }
  return absl::OkStatus();
}

}  // namespace kvsim
