// File: util/units.h
//
// Conversions between the units kvsim computes in (seconds, as doubles) and the integer nanoseconds its
// clocks and results use. One rounding rule for every conversion: to the nearest nanosecond, halves away
// from zero (std::llround).
#ifndef KVSIM_UTIL_UNITS_H_
#define KVSIM_UTIL_UNITS_H_

#include <cmath>
#include <cstdint>

namespace kvsim {

// std::llround(x) (halves away from zero) without the library call: the truncation is one instruction
// and x - trunc(x) is exact, so the result is llround's for every finite |x| < 2^63 (util/units_test
// compares the two). REQUIRES: x finite and |x| < 2^63.
inline int64_t RoundToInt64(double x) {
  const int64_t t = static_cast<int64_t>(x);  // toward zero
  const double rest = x - static_cast<double>(t);
  return rest >= 0.5 ? t + 1 : rest <= -0.5 ? t - 1 : t;
}

// `seconds` in nanoseconds, rounded to the nearest. REQUIRES: |seconds| * 1e9 fits in int64_t.
inline int64_t SecondsToNs(double seconds) { return RoundToInt64(seconds * 1e9); }

}  // namespace kvsim

#endif  // KVSIM_UTIL_UNITS_H_
