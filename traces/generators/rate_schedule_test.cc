#include "traces/generators/rate_schedule.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

RateSchedule Make(const std::string& text) {
  proto::RateSchedule spec;
  EXPECT_TRUE(ParseTextProto(text, "test", &spec).ok());
  absl::StatusOr<RateSchedule> schedule = RateSchedule::Create(spec, "arrivals.schedule");
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  return *schedule;
}

double TimeAt(RateSchedule& schedule, double expected_arrivals) {
  double t = -1;
  EXPECT_TRUE(schedule.TimeAt(expected_arrivals, &t)) << expected_arrivals;
  return t;
}

TEST(RateScheduleTest, ConstantRateDividesOperationalTime) {
  RateSchedule s = RateSchedule::Constant(4);
  EXPECT_DOUBLE_EQ(TimeAt(s, 0), 0);
  EXPECT_DOUBLE_EQ(TimeAt(s, 1), 0.25);
  EXPECT_DOUBLE_EQ(TimeAt(s, 1000), 250);
}

// r = 2 on [0, 10), 0 on [10, 20), 5 from 20 on: Lambda(10) = Lambda(20) = 20, then 20 + 5 (t - 20).
TEST(RateScheduleTest, StepsSkipZeroRateStretches) {
  RateSchedule s = Make(
      "points { time_s: 0 rate_per_s: 2 } points { time_s: 10 rate_per_s: 0 } "
      "points { time_s: 20 rate_per_s: 5 }");
  EXPECT_DOUBLE_EQ(TimeAt(s, 0), 0);
  EXPECT_DOUBLE_EQ(TimeAt(s, 3), 1.5);
  EXPECT_DOUBLE_EQ(TimeAt(s, 20), 10);
  EXPECT_DOUBLE_EQ(TimeAt(s, 20.5), 20.1);
  EXPECT_DOUBLE_EQ(TimeAt(s, 25), 21);
}

TEST(RateScheduleTest, LeadingZeroRateStartsWhereTheRateTurnsPositive) {
  RateSchedule s = Make("points { time_s: 0 rate_per_s: 0 } points { time_s: 5 rate_per_s: 2 }");
  EXPECT_DOUBLE_EQ(TimeAt(s, 0), 5);
  EXPECT_DOUBLE_EQ(TimeAt(s, 4), 7);
}

// r(t) = t on [0, 10] then 10: Lambda(t) = t^2/2 (so Lambda(10) = 50), then 50 + 10 (t - 10).
TEST(RateScheduleTest, LinearRampUp) {
  RateSchedule s = Make(
      "interpolation: INTERPOLATION_LINEAR points { time_s: 0 rate_per_s: 0 } "
      "points { time_s: 10 rate_per_s: 10 }");
  EXPECT_NEAR(TimeAt(s, 8), 4, 1e-12);   // t^2/2 = 8
  EXPECT_NEAR(TimeAt(s, 18), 6, 1e-12);  // t^2/2 = 18
  EXPECT_NEAR(TimeAt(s, 50), 10, 1e-12);
  EXPECT_NEAR(TimeAt(s, 60), 11, 1e-12);
}

// r(t) = 10 - t on [0, 10], then 0 forever: Lambda(t) = 10t - t^2/2, total 50; 10t - t^2/2 = 32 at t = 4.
TEST(RateScheduleTest, LinearRampDownEndsTheProcess) {
  RateSchedule s = Make(
      "interpolation: INTERPOLATION_LINEAR points { time_s: 0 rate_per_s: 10 } "
      "points { time_s: 10 rate_per_s: 0 }");
  EXPECT_NEAR(TimeAt(s, 32), 4, 1e-12);
  EXPECT_NEAR(TimeAt(s, 50), 10, 1e-9);
  double t;
  EXPECT_FALSE(s.TimeAt(50.5, &t));
}

// Period 2: rate 1 on [0, 1), 3 on [1, 2): 4 arrivals per period.
TEST(RateScheduleTest, PeriodicSteps) {
  RateSchedule s = Make("points { time_s: 0 rate_per_s: 1 } points { time_s: 1 rate_per_s: 3 } period_s: 2");
  EXPECT_DOUBLE_EQ(TimeAt(s, 0.5), 0.5);
  EXPECT_DOUBLE_EQ(TimeAt(s, 2.5), 1.5);
  EXPECT_DOUBLE_EQ(TimeAt(s, 4), 2);
  EXPECT_DOUBLE_EQ(TimeAt(s, 5), 3);
  EXPECT_DOUBLE_EQ(TimeAt(s, 9), 5);                // two periods (8) then 1 at rate 1
  EXPECT_DOUBLE_EQ(TimeAt(s, 403), 201 + 2.0 / 3);  // 100 periods, 1 at rate 1, 2 at rate 3
}

// Period 2, linear: 0 -> 2 over [0, 1], back to 0 over [1, 2] (the wrap goes to the first point's rate).
// Lambda(t) = t^2 on [0, 1]; on [1, 2], 1 + 2 tau - tau^2 with tau = t - 1.
TEST(RateScheduleTest, PeriodicLinearWrapsToTheFirstRate) {
  RateSchedule s = Make(
      "interpolation: INTERPOLATION_LINEAR points { time_s: 0 rate_per_s: 0 } "
      "points { time_s: 1 rate_per_s: 2 } period_s: 2");
  EXPECT_NEAR(TimeAt(s, 0.5), std::sqrt(0.5), 1e-12);
  EXPECT_NEAR(TimeAt(s, 1.5), 1 + (1 - std::sqrt(0.5)), 1e-12);  // 2 tau - tau^2 = 0.5
  EXPECT_NEAR(TimeAt(s, 2.25), 2.5, 1e-12);                      // next period: t'^2 = 0.25
}

void ExpectInvalid(const std::string& text, const std::string& field) {
  proto::RateSchedule spec;
  ASSERT_TRUE(ParseTextProto(text, "test", &spec).ok());
  absl::StatusOr<RateSchedule> s = RateSchedule::Create(spec, "arrivals.schedule");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
  EXPECT_NE(s.status().message().find(field), std::string::npos) << s.status();
}

TEST(RateScheduleTest, InvalidSchedulesNameTheField) {
  ExpectInvalid("", "arrivals.schedule.points: needs at least one point");
  ExpectInvalid("points { time_s: 1 rate_per_s: 1 }", "arrivals.schedule.points[0].time_s");
  ExpectInvalid("points { time_s: 0 rate_per_s: 1 } points { time_s: 0 rate_per_s: 1 }",
                "arrivals.schedule.points[1].time_s");
  ExpectInvalid("points { time_s: 0 rate_per_s: -1 }", "arrivals.schedule.points[0].rate_per_s");
  ExpectInvalid("points { time_s: 0 rate_per_s: inf }", "arrivals.schedule.points[0].rate_per_s");
  ExpectInvalid("points { time_s: 0 rate_per_s: 0 }", "every rate_per_s is 0");
  ExpectInvalid("points { time_s: 0 rate_per_s: 1 } points { time_s: 5 rate_per_s: 1 } period_s: 5",
                "arrivals.schedule.period_s");
}

}  // namespace
}  // namespace kvsim
