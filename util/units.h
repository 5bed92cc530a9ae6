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

// `seconds` in nanoseconds, rounded to the nearest. REQUIRES: |seconds| * 1e9 fits in int64_t.
inline int64_t SecondsToNs(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

}  // namespace kvsim

#endif  // KVSIM_UTIL_UNITS_H_
