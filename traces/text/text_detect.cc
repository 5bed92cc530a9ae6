#include "traces/text/text_detect.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "traces/text/csv_reader.h"
#include "util/file.h"

namespace kvsim {

absl::string_view FirstNonBlankLine(absl::string_view head) {
  ConsumeUtf8ByteOrderMark(&head);
  while (!head.empty()) {
    const size_t newline = head.find('\n');
    absl::string_view line = head.substr(0, newline);
    head = newline == absl::string_view::npos ? absl::string_view() : head.substr(newline + 1);
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) return line;
  }
  return {};
}

bool HasJsonKey(absl::string_view line, absl::string_view key) {
  const std::string quoted = absl::StrCat("\"", key, "\"");
  size_t pos = 0;
  while ((pos = line.find(quoted, pos)) != absl::string_view::npos) {
    pos += quoted.size();
    size_t after = pos;
    while (after < line.size() && (line[after] == ' ' || line[after] == '\t')) ++after;
    if (after < line.size() && line[after] == ':') return true;
  }
  return false;
}

std::vector<std::string> CsvHeaderFields(absl::string_view head) {
  std::vector<std::string> fields;
  if (!CsvReader::SplitRecord(FirstNonBlankLine(head), &fields)) return {};
  for (std::string& field : fields) field = std::string(absl::StripAsciiWhitespace(field));
  return fields;
}

bool HasColumns(const std::vector<std::string>& fields, const std::vector<absl::string_view>& required) {
  for (absl::string_view name : required) {
    if (std::find(fields.begin(), fields.end(), name) == fields.end()) return false;
  }
  return true;
}

}  // namespace kvsim
