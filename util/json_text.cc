#include "util/json_text.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace kvsim {

namespace {

// Length of the well-formed UTF-8 sequence at the front of `s` (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 if it does not start with one.
size_t Utf8SequenceLength(absl::string_view s) {
  const auto byte = [&s](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  size_t n;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) low = 0xA0;
    if (b0 == 0xED) high = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) low = 0x90;
    if (b0 == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string JsonQuote(absl::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(s.substr(i));
    if (n == 0) {  // not UTF-8: JSON text must be, so the byte becomes U+FFFD
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s.data() + i, n);
      i += n;
      continue;
    }
    const char c = s[i++];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonNumber(double x) { return std::isfinite(x) ? absl::StrFormat("%.6f", x) : "null"; }

}  // namespace kvsim
