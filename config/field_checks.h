// File: config/field_checks.h
//
// Range checks of configuration fields, shared by every reader of specs and configs so that each refusal
// has the same shape: "SOURCE: field FIELD: what was expected, got VALUE" (InvalidArgument).
// A NaN or infinite value fails every check.
//
// Example:
//   KVSIM_RETURN_IF_ERROR(RequireRange(source, "cache.block_tokens", cache.block_tokens(), 1, 1 << 20));
//
// Stateless functions; thread-safe.
#ifndef KVSIM_CONFIG_FIELD_CHECKS_H_
#define KVSIM_CONFIG_FIELD_CHECKS_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace kvsim {

// "SOURCE: field FIELD: WHAT" as InvalidArgument.
absl::Status FieldError(absl::string_view source, absl::string_view field, absl::string_view what);

// `status` with the position at which its source file sets the field it names: a FieldError
// ("SOURCE: field PATH: ...", or a NotFound in that form: an unknown preset) whose SOURCE is a text-proto file of `prototype`'s type (read again, at most
// 16 MiB) that sets PATH (util/text_proto.h's FieldPositionInText) becomes "SOURCE:LINE:COLUMN: field
// PATH: ...". For refusals raised after the file was parsed: LoadExperimentConfig's checks, and the serving
// checks of `kvsim config` and `kvsim replay`. Any other status, a SOURCE that cannot be read or does not
// parse as that type, and a field the file does not set (a preset's value, a default) are unchanged.
absl::Status WithFieldPositionFromFile(absl::Status status, const google::protobuf::Message& prototype);

// At most the first `max_bytes` bytes of `text`, followed by "... (N bytes)" when it was longer: what an
// error message quotes of an offending input (a 10 MB cell is not echoed whole).
std::string Excerpt(absl::string_view text, size_t max_bytes = 60);

// value > 0 and finite.
absl::Status RequirePositive(absl::string_view source, absl::string_view field, double value);
// value >= 0 and finite.
absl::Status RequireNonNegative(absl::string_view source, absl::string_view field, double value);
// value in [low, high]: limits that keep derived quantities (tokens, nanoseconds) within int64.
absl::Status RequireRange(absl::string_view source, absl::string_view field, double value, double low, double high);
// value == 0 (a figure not given) or in [low, high].
absl::Status RequireZeroOrRange(absl::string_view source, absl::string_view field, double value, double low,
                                double high);
// value in (0, 1].
absl::Status RequireFraction(absl::string_view source, absl::string_view field, double value);

// Plausible ranges of physical quantities (far beyond any real device, close enough that products and
// quotients of them, e.g. an iteration time in ns, stay finite and within int64).
inline constexpr double kMinFlopsPerS = 1e9;      // 1 GFLOP/s
inline constexpr double kMaxFlopsPerS = 1e18;     // 1 EFLOP/s on one device
inline constexpr double kMinBytesPerS = 1e6;      // 1 MB/s
inline constexpr double kMaxBytesPerS = 1e16;     // 10 PB/s
inline constexpr double kMinEfficiency = 1e-3;    // fractions of peak: 0.1% .. 100%
inline constexpr double kMaxDurationNs = 3.6e12;  // one hour: no kernel, iteration or tier access is longer

}  // namespace kvsim

#endif  // KVSIM_CONFIG_FIELD_CHECKS_H_
