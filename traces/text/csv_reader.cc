#include "traces/text/csv_reader.h"

#include "absl/strings/str_cat.h"

namespace kvsim {
namespace {

absl::string_view TrimSpaces(absl::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool IsBlank(absl::string_view line) { return TrimSpaces(line).empty(); }

// Unquotes the record in `raw` into `out` (fields back to back) and records each field's end offset in
// `bounds`. Returns "" on success, else what is wrong; `*incomplete` is set when a quote is still open at
// the end of `raw` (the record continues on the next line).
std::string Unquote(absl::string_view raw, std::string* out, std::vector<size_t>* bounds, bool* incomplete) {
  out->clear();
  bounds->clear();
  *incomplete = false;
  size_t i = 0;
  while (true) {
    // One field starting at i.
    size_t start = i;
    while (start < raw.size() && raw[start] == ' ') ++start;
    if (start < raw.size() && raw[start] == '"') {
      i = start + 1;
      while (true) {
        if (i >= raw.size()) {
          *incomplete = true;
          return "unterminated quoted field";
        }
        if (raw[i] == '"') {
          if (i + 1 < raw.size() && raw[i + 1] == '"') {
            out->push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        out->push_back(raw[i++]);
      }
      while (i < raw.size() && raw[i] == ' ') ++i;
      if (i < raw.size() && raw[i] != ',') {
        return absl::StrCat("expected ',' or end of line after a closing quote, found '", raw.substr(i, 1), "'");
      }
    } else {
      while (i < raw.size() && raw[i] != ',') out->push_back(raw[i++]);
    }
    bounds->push_back(out->size());
    if (i >= raw.size()) return "";
    ++i;  // the comma
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<CsvReader>> CsvReader::Open(const std::string& path, size_t buffer_bytes,
                                                           RepeatedColumns repeated) {
  auto lines = LineReader::Open(path, buffer_bytes);
  if (!lines.ok()) return lines.status();
  std::unique_ptr<CsvReader> csv(new CsvReader(std::move(lines).value()));
  if (!csv->ReadRecord()) {
    const absl::Status& status = csv->status_;
    if (status.code() == absl::StatusCode::kInvalidArgument) {
      return absl::InvalidArgumentError(absl::StrCat(status.message(), " (while reading the CSV header line)"));
    }
    if (!status.ok()) return status;
    return absl::InvalidArgumentError(absl::StrCat(path, ":1: expected a CSV header line, found an empty file"));
  }
  for (absl::string_view field : csv->fields_) {
    const absl::string_view name = TrimSpaces(field);
    for (size_t i = 0; i < csv->header_.size(); ++i) {
      if (repeated == RepeatedColumns::kRefuse && !name.empty() && csv->header_[i] == name) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", csv->record_line_, ":", csv->header_.size() + 1, ": duplicated column '", name.substr(0, 60),
            "' (first in column ", i + 1, "); each column name may appear once in the header"));
      }
    }
    csv->header_.emplace_back(name);
  }
  return csv;
}

bool CsvReader::SplitRecord(absl::string_view text, std::vector<std::string>* fields) {
  std::string out;
  std::vector<size_t> bounds;
  bool incomplete;
  if (!Unquote(text, &out, &bounds, &incomplete).empty()) return false;
  fields->clear();
  size_t begin = 0;
  for (size_t end : bounds) {
    fields->emplace_back(out.substr(begin, end - begin));
    begin = end;
  }
  return true;
}

bool CsvReader::ParseQuoted(absl::string_view first_line) {
  raw_.assign(first_line.data(), first_line.size());
  while (true) {
    bool incomplete;
    const std::string problem = Unquote(raw_, &unquoted_, &bounds_, &incomplete);
    if (problem.empty()) break;
    absl::string_view more;
    if (!incomplete || !lines_->Next(&more)) {
      if (status_.ok()) status_ = lines_->status();
      if (status_.ok()) {
        status_ =
            absl::InvalidArgumentError(absl::StrCat(lines_->path(), ":", record_line_, ": ",
                                                    incomplete ? "quoted field opened here is never closed" : problem));
      }
      return false;
    }
    raw_.push_back('\n');
    raw_.append(more.data(), more.size());
  }
  fields_.clear();
  size_t begin = 0;
  for (size_t end : bounds_) {
    fields_.emplace_back(unquoted_.data() + begin, end - begin);
    begin = end;
  }
  return true;
}

bool CsvReader::ReadRecord() {
  if (!status_.ok()) return false;
  absl::string_view line;
  do {
    if (!lines_->Next(&line)) {
      status_ = lines_->status();
      return false;
    }
  } while (IsBlank(line));
  record_line_ = lines_->line_number();
  if (line.find('"') != absl::string_view::npos) return ParseQuoted(line);
  fields_.clear();  // fast path: no quotes, split on commas
  size_t begin = 0;
  while (true) {
    const size_t comma = line.find(',', begin);
    if (comma == absl::string_view::npos) {
      fields_.push_back(line.substr(begin));
      return true;
    }
    fields_.push_back(line.substr(begin, comma - begin));
    begin = comma + 1;
  }
}

bool CsvReader::Next(std::vector<absl::string_view>* fields) {
  if (!ReadRecord()) return false;
  if (fields_.size() != header_.size()) {
    status_ =
        absl::InvalidArgumentError(absl::StrCat(lines_->path(), ":", record_line_, ": expected ", header_.size(),
                                                " comma-separated fields as in the header, found ", fields_.size()));
    return false;
  }
  *fields = fields_;
  return true;
}

int CsvReader::Column(absl::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace kvsim
