// File: traces/text/text_detect.h
//
// Small helpers for the format detectors: they look at a file's first bytes (possibly cut mid-line),
// never parse the whole file.
#ifndef KVSIM_TRACES_TEXT_TEXT_DETECT_H_
#define KVSIM_TRACES_TEXT_TEXT_DETECT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kvsim {

// The first line of `head` that is not blank, without a UTF-8 byte-order mark, '\r' or surrounding spaces.
absl::string_view FirstNonBlankLine(absl::string_view head);

// True if `line` contains the JSON key "`key`" followed (after spaces) by ':'.
bool HasJsonKey(absl::string_view line, absl::string_view key);

// The CSV header fields of `head`'s first non-blank line (unquoted, trimmed); empty if it is no valid CSV.
std::vector<std::string> CsvHeaderFields(absl::string_view head);

// True if every name in `required` is among `fields`.
bool HasColumns(const std::vector<std::string>& fields, const std::vector<absl::string_view>& required);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TEXT_TEXT_DETECT_H_
