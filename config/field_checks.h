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

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kvsim {

// "SOURCE: field FIELD: WHAT" as InvalidArgument.
absl::Status FieldError(absl::string_view source, absl::string_view field, absl::string_view what);

// value > 0 and finite.
absl::Status RequirePositive(absl::string_view source, absl::string_view field, double value);
// value >= 0 and finite.
absl::Status RequireNonNegative(absl::string_view source, absl::string_view field, double value);
// value in [low, high]: limits that keep derived quantities (tokens, nanoseconds) within int64.
absl::Status RequireRange(absl::string_view source, absl::string_view field, double value, double low, double high);
// value in (0, 1].
absl::Status RequireFraction(absl::string_view source, absl::string_view field, double value);

}  // namespace kvsim

#endif  // KVSIM_CONFIG_FIELD_CHECKS_H_
