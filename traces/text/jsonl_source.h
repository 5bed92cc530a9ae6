// File: traces/text/jsonl_source.h
//
// JsonlSource: the RecordSource shared by the JSON-lines importers (Mooncake, Qwen-Bailian,
// hash-per-block). It streams the file through a LineReader, parses each non-blank line in place with
// simdjson (fully validating: a truncated line or trailing garbage is an error) and hands the object to
// the format's ParseObject(). Errors read "<path>:<line>: <field>: <what was expected>, got <value>".
//
// The field helpers below produce the "<field>: ..." part; they accept exactly the JSON type the format
// specifies (an integer field given 1.5 or "7" is an error, not a silent conversion).
//
// A key that appears twice in one line's object is an error ("<path>:<line>: duplicate key \"k\" ..."),
// checked before ParseObject() sees the object: JSON leaves duplicates undefined and readers disagree
// (first or last value), so kvsim takes neither. A format that reads nested objects checks each one with
// JsonUniqueKeys().
//
// Example (a format's source):
//   class MySource final : public JsonlSource {
//     absl::Status ParseObject(simdjson::dom::object object, Request* request) override {
//       for (auto [key, value] : object) {
//         if (key == "n") KVSIM_RETURN_IF_ERROR(JsonInt(value, "n", 0, &request->input_tokens));
//       }
//       ...
//
// Thread-safety: one thread at a time.
#ifndef KVSIM_TRACES_TEXT_JSONL_SOURCE_H_
#define KVSIM_TRACES_TEXT_JSONL_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "simdjson.h"
#include "traces/request.h"
#include "traces/text/import_reader.h"
#include "traces/text/line_reader.h"

namespace kvsim {

class JsonlSource : public RecordSource {
 public:
  explicit JsonlSource(std::unique_ptr<LineReader> lines) : lines_(std::move(lines)) {}

  bool Next(Request* request) final;
  absl::Status status() const final { return status_; }
  std::string position() const final;

 protected:
  // Fills `*request` (already cleared) from one line's object; arrival_ns = the source's timestamp in ns.
  // Returns InvalidArgument "<field>: <expected>, got <value>" (JsonlSource adds "<path>:<line>: ").
  virtual absl::Status ParseObject(simdjson::dom::object object, Request* request) = 0;

  // Called once, when the file ends after the last record; an error it returns becomes status() (with
  // its own "<path>:<line>: " prefix). For checks that need the whole file, such as repeated ids.
  virtual absl::Status AtEnd() { return absl::OkStatus(); }

  const std::string& path() const { return lines_->path(); }
  // The line of the record being parsed (1-based).
  int64_t line_number() const { return lines_->line_number(); }

  // Makes Next() pass over the first non-blank line without parsing it (a header the opener read).
  void SkipHeaderLine() { skip_header_ = true; }

 private:
  bool skip_header_ = false;
  std::unique_ptr<LineReader> lines_;
  simdjson::dom::parser parser_;
  absl::Status status_;
};

// OK if no key appears twice in `object` (keys compared after unescaping, so "a" and "\u0061" are the same
// key); else InvalidArgument "<where>duplicate key \"<key>\" (each key may appear once per object)".
// `where` prefixes the message, e.g. "tool_calls[2]: " (empty for a line's top-level object).
absl::Status JsonUniqueKeys(simdjson::dom::object object, absl::string_view where = "");

// The error "<field>: expected <expected>, got <the value as JSON, shortened>".
absl::Status JsonFieldError(absl::string_view field, absl::string_view expected, simdjson::dom::element value);
// The error "<field>: missing (expected <expected>)".
absl::Status JsonMissingField(absl::string_view field, absl::string_view expected);

// An integer in [min_value, max_value].
absl::Status JsonInt(simdjson::dom::element value, absl::string_view field, int64_t min_value, int64_t max_value,
                     int64_t* out);
// Any number (integer or not), as a double.
absl::Status JsonNumber(simdjson::dom::element value, absl::string_view field, double* out);
// An array of 64-bit integer ids. Ids are opaque: a negative (signed) id is kept as its two's-complement
// bit pattern, so equal ids stay equal and distinct ids stay distinct.
absl::Status JsonIdArray(simdjson::dom::element value, absl::string_view field, std::vector<uint64_t>* out);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TEXT_JSONL_SOURCE_H_
