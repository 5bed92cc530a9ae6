#include "traces/generators/rate_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/check.h"

namespace kvsim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

}  // namespace

absl::StatusOr<RateSchedule> RateSchedule::Create(const proto::RateSchedule& spec, const std::string& field) {
  const auto& points = spec.points();
  if (points.empty()) return Invalid(field + ".points", "needs at least one point");
  bool any_positive = false;
  for (int i = 0; i < points.size(); ++i) {
    const std::string at = absl::StrCat(field, ".points[", i, "]");
    const double t = points[i].time_s();
    const double r = points[i].rate_per_s();
    if (i == 0 && t != 0) return Invalid(at + ".time_s", absl::StrFormat("the first point must be at 0, got %g", t));
    if (!std::isfinite(t) || (i > 0 && t <= points[i - 1].time_s())) {
      return Invalid(at + ".time_s", absl::StrFormat("must be finite and > the previous point's, got %g", t));
    }
    if (!std::isfinite(r) || r < 0) {
      return Invalid(at + ".rate_per_s", absl::StrFormat("must be a finite number >= 0, got %g", r));
    }
    any_positive = any_positive || r > 0;
  }
  if (!any_positive) return Invalid(field + ".points", "every rate_per_s is 0: no session would arrive");
  const double last_time = points[points.size() - 1].time_s();
  const double period = spec.period_s();
  if (!std::isfinite(period) || period < 0 || (period > 0 && period <= last_time)) {
    return Invalid(field + ".period_s",
                   absl::StrFormat("must be 0 or > the last point's time (%g), got %g", last_time, period));
  }
  const bool linear = spec.interpolation() == proto::RateSchedule::INTERPOLATION_LINEAR;
  RateSchedule schedule;
  schedule.period_s_ = period;
  for (int i = 0; i < points.size(); ++i) {
    Segment s;
    s.start_s = points[i].time_s();
    s.start_rate = points[i].rate_per_s();
    const bool last = i + 1 == points.size();
    if (last && period == 0) {
      s.length_s = kInf;
      s.end_rate = s.start_rate;
      s.arrivals = s.start_rate > 0 ? kInf : 0;
    } else {
      s.length_s = (last ? period : points[i + 1].time_s()) - s.start_s;
      const double next_rate = last ? points[0].rate_per_s() : points[i + 1].rate_per_s();
      s.end_rate = linear ? next_rate : s.start_rate;
      s.arrivals = (s.start_rate + s.end_rate) / 2 * s.length_s;
    }
    schedule.segments_.push_back(s);
  }
  return schedule;
}

RateSchedule RateSchedule::Constant(double rate_per_s) {
  KVSIM_CHECK(rate_per_s > 0 && std::isfinite(rate_per_s)) << rate_per_s;
  RateSchedule schedule;
  schedule.segments_.push_back({0, kInf, rate_per_s, rate_per_s, kInf});
  return schedule;
}

double RateSchedule::OffsetWithin(const Segment& s, double remaining) {
  if (remaining <= 0) return 0;
  double offset;
  if (s.start_rate == s.end_rate) {
    offset = remaining / s.start_rate;
  } else {
    // r0 tau + a tau^2 / 2 = remaining with a = (r1 - r0) / length; the root in the form that is stable
    // for either sign of a: tau = 2 remaining / (r0 + sqrt(r0^2 + 2 a remaining)).
    const double a = (s.end_rate - s.start_rate) / s.length_s;
    const double disc = std::max(0.0, s.start_rate * s.start_rate + 2 * a * remaining);
    offset = 2 * remaining / (s.start_rate + std::sqrt(disc));
  }
  return std::min(offset, s.length_s);
}

bool RateSchedule::TimeAt(double expected_arrivals, double* time_s) {
  KVSIM_CHECK(expected_arrivals >= last_query_) << expected_arrivals << " < " << last_query_;
  last_query_ = expected_arrivals;
  while (true) {
    const Segment& s = segments_[index_];
    // Stretches with rate 0 are skipped, so L = 0 maps to the moment the rate first becomes positive.
    if (s.arrivals > 0 && expected_arrivals <= arrivals_before_ + s.arrivals) {
      *time_s =
          static_cast<double>(period_) * period_s_ + s.start_s + OffsetWithin(s, expected_arrivals - arrivals_before_);
      return true;
    }
    if (std::isinf(s.length_s)) return false;  // open-ended segment with rate 0: the process has ended
    arrivals_before_ += s.arrivals;
    if (++index_ == segments_.size()) {
      index_ = 0;
      ++period_;
    }
  }
}

}  // namespace kvsim
