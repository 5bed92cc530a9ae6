// File: util/json_text.h
//
// JSON text for the report writers that build their JSON by hand (the quality and closed-loop reports):
// one quoting rule and one number format, so their files agree. (util/table.h and the JSONL trace export
// still quote on their own, with the short escapes \n and \t; one JSON library for every file is open work.)
//
// Stateless; thread-safe.
#ifndef KVSIM_UTIL_JSON_TEXT_H_
#define KVSIM_UTIL_JSON_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace kvsim {

// `s` as a JSON string literal: quotes and backslashes escaped, other control characters as \u00XX,
// and each byte that is not part of well-formed UTF-8 (an input's model name in another encoding) as
// \ufffd, so the result is always valid JSON.
std::string JsonQuote(absl::string_view s);

// `x` with six decimals, or null when it is not finite (JSON has no NaN or infinity).
std::string JsonNumber(double x);

}  // namespace kvsim

#endif  // KVSIM_UTIL_JSON_TEXT_H_
