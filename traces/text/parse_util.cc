#include "traces/text/parse_util.h"

#include <limits>

namespace kvsim {
namespace {

absl::string_view Trim(absl::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Exactly `n` digits at `*pos` into `*value`; advances `*pos`.
bool FixedDigits(absl::string_view text, size_t* pos, int n, int64_t* value) {
  if (*pos + n > text.size()) return false;
  int64_t v = 0;
  for (int i = 0; i < n; ++i) {
    const char c = text[*pos + i];
    if (!IsDigit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *value = v;
  return true;
}

// Digits after the point, scaled to ns of a unit worth `scale_ns`: "25" with 1e9 -> 250'000'000.
bool FractionToNs(absl::string_view digits, int64_t scale_ns, int64_t* ns) {
  // Value = digits / 10^len * scale_ns, truncated toward zero. Digits past the 18th are below 1e-18 of a
  // unit, far below 1 ns for any scale_ns <= 1e9, so they are skipped (the numerator fits int64).
  int64_t numerator = 0;
  int64_t denominator = 1;
  for (char c : digits) {
    if (!IsDigit(c)) return false;
    if (denominator < 1'000'000'000'000'000'000) {
      numerator = numerator * 10 + (c - '0');
      denominator *= 10;
    }
  }
  // numerator < denominator <= 1e18: the 128-bit product is exact.
  const __int128 product = static_cast<__int128>(numerator) * scale_ns;
  *ns = static_cast<int64_t>(product / denominator);
  return true;
}

}  // namespace

bool ParseInt64(absl::string_view text, int64_t* value) {
  text = Trim(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return false;
  uint64_t magnitude = 0;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  for (char c : text) {
    if (!IsDigit(c)) return false;
    const uint64_t digit = c - '0';
    if (magnitude > (limit - digit) / 10) return false;
    magnitude = magnitude * 10 + digit;
  }
  *value = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

bool ParseDecimalToNs(absl::string_view text, int64_t scale_ns, int64_t* ns) {
  text = Trim(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  const size_t point = text.find('.');
  absl::string_view whole = text.substr(0, point);
  absl::string_view fraction = point == absl::string_view::npos ? "" : text.substr(point + 1);
  if (whole.empty() && fraction.empty()) return false;
  if (point != absl::string_view::npos && fraction.empty() && whole.empty()) return false;
  int64_t units = 0;
  for (char c : whole) {
    if (!IsDigit(c)) return false;
    if (units > kMaxAbsTimestampNs / 10) return false;
    units = units * 10 + (c - '0');
  }
  int64_t fraction_ns = 0;
  if (!FractionToNs(fraction, scale_ns, &fraction_ns)) return false;
  if (units > (kMaxAbsTimestampNs - fraction_ns) / scale_ns) return false;
  const int64_t total = units * scale_ns + fraction_ns;
  *ns = negative ? -total : total;
  return true;
}

int64_t DaysFromCivil(int64_t year, int64_t month, int64_t day) {
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t yoe = year - era * 400;
  const int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool ParseDateTimeNs(absl::string_view text, int64_t* ns) {
  text = Trim(text);
  size_t pos = 0;
  int64_t year, month, day, hour, minute, second;
  auto expect = [&](char c) {
    if (pos >= text.size() || text[pos] != c) return false;
    ++pos;
    return true;
  };
  if (!FixedDigits(text, &pos, 4, &year) || !expect('-') || !FixedDigits(text, &pos, 2, &month) || !expect('-') ||
      !FixedDigits(text, &pos, 2, &day)) {
    return false;
  }
  if (pos >= text.size() || (text[pos] != ' ' && text[pos] != 'T')) return false;
  ++pos;
  if (!FixedDigits(text, &pos, 2, &hour) || !expect(':') || !FixedDigits(text, &pos, 2, &minute) || !expect(':') ||
      !FixedDigits(text, &pos, 2, &second)) {
    return false;
  }
  static constexpr int kDaysInMonth[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > kDaysInMonth[month - 1] || hour > 23 || minute > 59 || second > 60) {
    return false;
  }
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month == 2 && day == 29 && !leap) return false;
  int64_t fraction_ns = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const size_t start = pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos;
    if (pos == start) return false;
    FractionToNs(text.substr(start, pos - start), 1'000'000'000, &fraction_ns);
  }
  int64_t offset_s = 0;
  if (pos < text.size()) {
    const char sign = text[pos];
    if (sign == 'Z' && pos + 1 == text.size()) {
      ++pos;
    } else if (sign == '+' || sign == '-') {
      ++pos;
      int64_t zone_hours, zone_minutes;
      if (!FixedDigits(text, &pos, 2, &zone_hours)) return false;
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (!FixedDigits(text, &pos, 2, &zone_minutes)) return false;
      if (zone_hours > 23 || zone_minutes > 59) return false;
      offset_s = (zone_hours * 3600 + zone_minutes * 60) * (sign == '+' ? 1 : -1);
    } else {
      return false;
    }
  }
  if (pos != text.size()) return false;
  const int64_t seconds = DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  // kMaxAbsTimestampNs is about 4.6e9 s: years roughly 1824 to 2116 fit.
  if (seconds > kMaxAbsTimestampNs / 1'000'000'000 - 1 || seconds < -(kMaxAbsTimestampNs / 1'000'000'000 - 1)) {
    return false;
  }
  *ns = seconds * 1'000'000'000 + fraction_ns;
  return true;
}

}  // namespace kvsim
