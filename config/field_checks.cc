#include "config/field_checks.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/file.h"
#include "util/text_proto.h"

namespace kvsim {

absl::Status FieldError(absl::string_view source, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": field ", field, ": ", what));
}

absl::Status WithFieldPositionFromFile(absl::Status status, const google::protobuf::Message& prototype) {
  if (status.code() != absl::StatusCode::kInvalidArgument && status.code() != absl::StatusCode::kNotFound) {
    return status;
  }
  constexpr absl::string_view kFieldMark = ": field ";  // FieldError's "SOURCE: field PATH: WHAT"
  const absl::string_view message = status.message();
  const size_t source_end = message.find(kFieldMark);
  if (source_end == absl::string_view::npos || source_end == 0) return status;
  const absl::string_view source = message.substr(0, source_end);
  const absl::string_view path_and_what = message.substr(source_end + kFieldMark.size());
  const size_t path_end = path_and_what.find(": ");
  if (path_end == absl::string_view::npos) return status;
  absl::StatusOr<std::string> text = ReadFile(std::string(source), int64_t{16} << 20);
  if (!text.ok()) return status;
  absl::string_view view = *text;
  ConsumeUtf8ByteOrderMark(&view);
  const std::string position = FieldPositionInText(view, prototype, path_and_what.substr(0, path_end));
  if (position.empty()) return status;
  absl::Status positioned =
      absl::Status(status.code(), absl::StrCat(source, ":", position, kFieldMark, path_and_what));
  status.ForEachPayload(
      [&positioned](absl::string_view url, const absl::Cord& payload) { positioned.SetPayload(url, payload); });
  return positioned;
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
