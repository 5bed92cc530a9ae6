// File: util/json_text.h
//
// The one JSON writer of kvsim's results: an object model (nlohmann-json's ordered_json, Debian's
// nlohmann-json3-dev), so a key is set once and every value is typed (numbers as numbers, missing numbers
// as null), plus the quoting rule and number format of the reports that still append text (the
// closed-loop report) and a protobuf -> JSON conversion that keeps 64-bit integers as numbers.
//
// Example:
//   Json row = Json::object();
//   row["policy"] = "lru";
//   row["hit_ratio"] = JsonNumberOrNull(0.5);
//   std::string text = DumpJson(row);   // "{\n  \"policy\": \"lru\",\n  \"hit_ratio\": 0.5\n}\n"
//
// Stateless; thread-safe.
#ifndef KVSIM_UTIL_JSON_TEXT_H_
#define KVSIM_UTIL_JSON_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace kvsim {

// Objects keep the order keys were first set in (so files read in the order they are written).
using Json = nlohmann::ordered_json;

// Pretty-printed with two-space indentation and a final newline. Strings that are not valid UTF-8 get
// U+FFFD for the bad bytes instead of failing.
std::string DumpJson(const Json& json);

// Compact, on one line, without a final newline (`{"a":1,"b":[2,3]}`): a JSONL record or an embedded
// header (safetensors). Bad UTF-8 as in DumpJson.
std::string DumpJsonLine(const Json& json);

// `x`, or null when it is not finite (JSON has no NaN or infinity).
Json JsonNumberOrNull(double x);

// A message as JSON: fields in declaration order under their proto names; every scalar field (default
// values included); 64-bit integers as numbers (not strings, as protobuf's JSON printer writes them);
// enums by name; non-finite doubles and unset proto3 `optional` fields as null; unset sub-messages left
// out; repeated fields as arrays.
Json ProtoToJson(const google::protobuf::Message& message);

// `s` as a JSON string literal (quotes, backslashes and control characters escaped; bytes that are not
// well-formed UTF-8, e.g. an input's model name in another encoding, become U+FFFD, so the result is
// always valid JSON).
std::string JsonQuote(absl::string_view s);

// `x` with six decimals, or null when it is not finite.
std::string JsonNumber(double x);

}  // namespace kvsim

#endif  // KVSIM_UTIL_JSON_TEXT_H_
