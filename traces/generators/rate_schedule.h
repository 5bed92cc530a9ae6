// File: traces/generators/rate_schedule.h
//
// RateSchedule: an arrival rate r(t) that changes over time (piecewise constant or piecewise linear,
// optionally periodic), and the map from "operational time" L (expected arrivals so far) back to clock
// time: t = Lambda^-1(L), where Lambda(t) is the integral of r over [0, t]. A unit-rate process mapped
// through it has rate r(t) (time rescaling; exact for Poisson processes). Between points, Lambda is
// linear (step) or quadratic (linear rate), so the inverse is closed form.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(RateSchedule schedule,
//                          RateSchedule::Create(spec.schedule(), "arrivals.schedule"));
//   double t_s;
//   double L = 0;
//   while (schedule.TimeAt(L += gap, &t_s)) Emit(t_s);  // L must not decrease between calls
//
// Thread-safety: TimeAt() advances an internal cursor; one thread at a time.
#ifndef KVSIM_TRACES_GENERATORS_RATE_SCHEDULE_H_
#define KVSIM_TRACES_GENERATORS_RATE_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/workload.pb.h"

namespace kvsim {

class RateSchedule {
 public:
  // Validates `spec` (points non-empty, first at time 0, times strictly increasing and finite, rates
  // finite and >= 0, not all 0, period_s 0 or > the last time). Errors are InvalidArgument naming
  // "<field>.<subfield>".
  static absl::StatusOr<RateSchedule> Create(const proto::RateSchedule& spec, const std::string& field);

  // The constant rate `rate_per_s`. REQUIRES: rate_per_s > 0 and finite.
  static RateSchedule Constant(double rate_per_s);

  // Sets *time_s to the time t at which Lambda(t) reaches `expected_arrivals` and returns true; returns
  // false when Lambda never reaches it (the rate is 0 from some time on, so the process has ended).
  // Stretches where the rate is 0 are skipped: 0 maps to the moment the rate first becomes positive.
  // REQUIRES: expected_arrivals >= 0 and >= the argument of the previous call.
  bool TimeAt(double expected_arrivals, double* time_s);

 private:
  struct Segment {
    double start_s;     // within one period (or absolute when not periodic)
    double length_s;    // +inf for the open-ended last segment of a non-periodic schedule
    double start_rate;  // r at the segment's start
    double end_rate;    // r at its end (= start_rate for steps and the open-ended segment)
    double arrivals;    // integral of r over the segment (+inf or 0 for the open-ended one)
  };
  RateSchedule() = default;
  // The offset within segment `s` at which its integral reaches `remaining` (0 <= remaining <= s.arrivals).
  static double OffsetWithin(const Segment& s, double remaining);

  std::vector<Segment> segments_;
  double period_s_ = 0;  // 0 = not periodic
  // Cursor: segment index, periods completed, and Lambda and clock time at the current segment's start.
  size_t index_ = 0;
  int64_t period_ = 0;
  double arrivals_before_ = 0;
  double last_query_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_TRACES_GENERATORS_RATE_SCHEDULE_H_
