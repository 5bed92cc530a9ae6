// File: sim/serving/clock.h
//
// Simulated time. SimTime is an integer count of nanoseconds since the trace's first arrival; it is never a
// floating-point value, so event order and every reported time are exact and reproducible.
//
// Example:
//   SimTime end_ns = now_ns + iteration_ns;
//   double end_ms = NsToMs(end_ns);   // only for reporting
#ifndef KVSIM_SIM_SERVING_CLOCK_H_
#define KVSIM_SIM_SERVING_CLOCK_H_

#include <cstdint>

namespace kvsim {

using SimTime = int64_t;  // nanoseconds

inline constexpr SimTime kNsPerUs = 1000;
inline constexpr SimTime kNsPerMs = 1000 * 1000;
inline constexpr SimTime kNsPerS = 1000 * 1000 * 1000;

// Conversions for reports; the simulation itself never uses them.
inline double NsToMs(SimTime ns) { return static_cast<double>(ns) / kNsPerMs; }
inline double NsToS(SimTime ns) { return static_cast<double>(ns) / kNsPerS; }

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_CLOCK_H_
