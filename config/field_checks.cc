#include "config/field_checks.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "util/file.h"
#include "util/text_proto.h"

namespace kvsim {

absl::Status FieldError(absl::string_view source, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": field ", field, ": ", what));
}

absl::Status WithFieldPosition(absl::Status status, absl::string_view source, absl::string_view text,
                               const google::protobuf::Message& prototype) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  absl::string_view rest = status.message();
  if (!absl::ConsumePrefix(&rest, source) || !absl::ConsumePrefix(&rest, ": field ")) return status;
  const size_t end = rest.find(": ");
  if (end == absl::string_view::npos) return status;
  const std::string position = FieldPositionInText(text, prototype, rest.substr(0, end));
  if (position.empty()) return status;
  absl::Status positioned = absl::InvalidArgumentError(absl::StrCat(source, ":", position, ": field ", rest));
  status.ForEachPayload(
      [&positioned](absl::string_view url, const absl::Cord& payload) { positioned.SetPayload(url, payload); });
  return positioned;
}

absl::Status WithFieldPositionFromFile(absl::Status status, const google::protobuf::Message& prototype) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  const absl::string_view message = status.message();
  const size_t end = message.find(": field ");
  if (end == absl::string_view::npos || end == 0) return status;
  const std::string source(message.substr(0, end));
  absl::StatusOr<std::string> text = ReadFile(source, int64_t{16} << 20);
  if (!text.ok()) return status;
  absl::string_view view = *text;
  ConsumeUtf8ByteOrderMark(&view);
  return WithFieldPosition(std::move(status), source, view, prototype);
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
