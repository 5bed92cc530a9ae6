#include "traces/text/jsonl_source.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

namespace kvsim {
namespace {

bool IsBlankLine(absl::string_view line) {
  for (char c : line) {
    if (c != ' ' && c != '\t') return false;
  }
  return true;
}

std::string Shorten(std::string text) {
  constexpr size_t kMax = 60;
  if (text.size() > kMax) text = absl::StrCat(text.substr(0, kMax), "...");
  return text;
}

}  // namespace

bool JsonlSource::Next(Request* request) {
  if (!status_.ok()) return false;
  absl::string_view line;
  do {
    do {
      if (!lines_->Next(&line)) {
        status_ = lines_->status();
        if (status_.ok()) status_ = AtEnd();
        return false;
      }
    } while (IsBlankLine(line));
  } while (std::exchange(skip_header_, false));
  request->Clear();
  simdjson::dom::element element;
  // LineReader guarantees kLinePaddingBytes (>= SIMDJSON_PADDING) readable bytes after the line.
  static_assert(kLinePaddingBytes >= simdjson::SIMDJSON_PADDING, "padding too small for simdjson");
  const simdjson::error_code parse_error =
      parser_.parse(line.data(), line.size(), /*realloc_if_needed=*/false).get(element);
  absl::Status status;
  if (parse_error != simdjson::SUCCESS) {
    status = absl::InvalidArgumentError(
        absl::StrCat("expected one JSON object per line: ", simdjson::error_message(parse_error)));
  } else {
    simdjson::dom::object object;
    if (element.get_object().get(object) != simdjson::SUCCESS) {
      status = absl::InvalidArgumentError(
          absl::StrCat("expected one JSON object per line, got ", Shorten(simdjson::minify(element))));
    } else {
      status = JsonUniqueKeys(object);
      if (status.ok()) status = ParseObject(object, request);
    }
  }
  if (!status.ok()) {
    status_ = absl::Status(status.code(), absl::StrCat(position(), ": ", status.message()));
    return false;
  }
  return true;
}

std::string JsonlSource::position() const { return absl::StrCat(lines_->path(), ":", lines_->line_number()); }

absl::Status JsonUniqueKeys(simdjson::dom::object object, absl::string_view where) {
  // Records have a handful of keys: a linear scan of the keys so far, and a hash set past kLinear keys
  // (so an adversarial line with many keys stays linear in its size).
  constexpr size_t kLinear = 32;
  absl::InlinedVector<std::string_view, kLinear> keys;
  absl::flat_hash_set<std::string_view> many;
  for (auto [key, value] : object) {
    bool seen = false;
    if (many.empty()) {
      seen = std::find(keys.begin(), keys.end(), key) != keys.end();
      if (!seen && keys.size() < kLinear) {
        keys.push_back(key);
      } else if (!seen) {
        many.insert(keys.begin(), keys.end());
        many.insert(key);
      }
    } else {
      seen = !many.insert(key).second;
    }
    if (seen) {
      std::string shown(key.substr(0, 60));
      if (key.size() > 60) shown += "...";
      return absl::InvalidArgumentError(
          absl::StrCat(where, "duplicate key \"", shown, "\" (each key may appear once per object)"));
    }
  }
  return absl::OkStatus();
}

absl::Status JsonFieldError(absl::string_view field, absl::string_view expected, simdjson::dom::element value) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": expected ", expected, ", got ", Shorten(simdjson::minify(value))));
}

absl::Status JsonMissingField(absl::string_view field, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": missing (expected ", expected, ")"));
}

absl::Status JsonInt(simdjson::dom::element value, absl::string_view field, int64_t min_value, int64_t max_value,
                     int64_t* out) {
  int64_t v;
  if (value.get_int64().get(v) != simdjson::SUCCESS || v < min_value || v > max_value) {
    return JsonFieldError(field, absl::StrCat("an integer in [", min_value, ", ", max_value, "]"), value);
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status JsonNumber(simdjson::dom::element value, absl::string_view field, double* out) {
  if (!value.is_number() || value.get_double().get(*out) != simdjson::SUCCESS) {
    return JsonFieldError(field, "a number", value);
  }
  return absl::OkStatus();
}

absl::Status JsonIdArray(simdjson::dom::element value, absl::string_view field, std::vector<uint64_t>* out) {
  simdjson::dom::array array;
  if (value.get_array().get(array) != simdjson::SUCCESS) {
    return JsonFieldError(field, "an array of integer ids", value);
  }
  out->clear();
  out->reserve(array.size());
  size_t index = 0;
  for (simdjson::dom::element id : array) {
    if (id.is_uint64()) {
      out->push_back(id.get_uint64().value_unsafe());
    } else if (id.is_int64()) {
      out->push_back(static_cast<uint64_t>(id.get_int64().value_unsafe()));
    } else {
      return JsonFieldError(absl::StrCat(field, "[", index, "]"), "an integer id", id);
    }
    ++index;
  }
  return absl::OkStatus();
}

}  // namespace kvsim
