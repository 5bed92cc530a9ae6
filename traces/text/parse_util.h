// File: traces/text/parse_util.h
//
// Exact, locale-free parsers for the scalar fields of text traces. Each returns false (never throws or
// aborts) when the text is not exactly of the expected form; the caller turns that into a Status naming
// the file, line and field. Surrounding spaces are allowed; nothing else is.
//
// Example:
//   int64_t ns;
//   if (!ParseDecimalToNs("1.25", /*scale_ns=*/1'000'000'000, &ns)) return FieldError(...);  // ns = 1.25e9
#ifndef KVSIM_TRACES_TEXT_PARSE_UTIL_H_
#define KVSIM_TRACES_TEXT_PARSE_UTIL_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "traces/request.h"

namespace kvsim {

// Largest |timestamp| in ns accepted from any source (about 146 years): differences of two timestamps
// then never overflow int64.
inline constexpr int64_t kMaxAbsTimestampNs = int64_t{1} << 62;

// Largest token count accepted from any source: the per-request limit of traces/request.h.
inline constexpr int64_t kMaxTraceTokens = kMaxRequestTokens;

// A base-10 integer with optional sign ("-12", "+7", "0"); false on overflow or any other character.
bool ParseInt64(absl::string_view text, int64_t* value);

// A decimal number ("12", "-0.5", "3.0000001", "1e3" is rejected) times `scale_ns` (the ns per unit:
// 1'000'000'000 for seconds, 1'000'000 for ms), exact to the ns: digits beyond ns precision are
// truncated toward zero. False if the result exceeds kMaxAbsTimestampNs.
bool ParseDecimalToNs(absl::string_view text, int64_t scale_ns, int64_t* ns);

// A wall-clock time "YYYY-MM-DD HH:MM:SS[.f...]" (or 'T' between date and time), optional zone suffix
// "Z" or "+HH:MM"/"-HH:MM" (or "+HHMM"), up to 9 fractional digits (more are truncated), as ns since
// 1970-01-01 00:00:00 UTC (times without a zone are taken as UTC). False on any out-of-range part or a
// time further than kMaxAbsTimestampNs from 1970 (years outside about 1824..2116).
bool ParseDateTimeNs(absl::string_view text, int64_t* ns);

// Days since 1970-01-01 of the proleptic Gregorian date (Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t year, int64_t month, int64_t day);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TEXT_PARSE_UTIL_H_
