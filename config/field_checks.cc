#include "config/field_checks.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvsim {

absl::Status FieldError(absl::string_view source, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": field ", field, ": ", what));
}

std::string Excerpt(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  return absl::StrCat(text.substr(0, max_bytes), "... (", text.size(), " bytes)");
}

absl::Status RequirePositive(absl::string_view source, absl::string_view field, double value) {
  if (!(value > 0) || !std::isfinite(value)) {
    return FieldError(source, field, absl::StrCat("must be > 0, got ", value));
  }
  return absl::OkStatus();
}

absl::Status RequireNonNegative(absl::string_view source, absl::string_view field, double value) {
  if (!(value >= 0) || !std::isfinite(value)) {
    return FieldError(source, field, absl::StrCat("must be >= 0, got ", value));
  }
  return absl::OkStatus();
}

absl::Status RequireRange(absl::string_view source, absl::string_view field, double value, double low, double high) {
  if (!(value >= low && value <= high)) {
    return FieldError(source, field, absl::StrFormat("must be in [%.15g, %.15g], got %.15g", low, high, value));
  }
  return absl::OkStatus();
}

absl::Status RequireZeroOrRange(absl::string_view source, absl::string_view field, double value, double low,
                                double high) {
  if (value == 0) return absl::OkStatus();
  if (!(value >= low && value <= high)) {
    return FieldError(source, field,
                      absl::StrFormat("must be 0 (not given) or in [%.15g, %.15g], got %.15g", low, high, value));
  }
  return absl::OkStatus();
}

absl::Status RequireFraction(absl::string_view source, absl::string_view field, double value) {
  if (!(value > 0 && value <= 1)) {
    return FieldError(source, field, absl::StrCat("must be in (0, 1], got ", value));
  }
  return absl::OkStatus();
}

}  // namespace kvsim
