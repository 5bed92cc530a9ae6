#include "traces/generators/arrival_process.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

constexpr double kZ = 5;  // tolerances are 5 standard errors (see portable_random_test.cc)

absl::StatusOr<std::unique_ptr<ArrivalProcess>> Create(const std::string& text, uint64_t seed = 1,
                                                       const TraceOpener& open = nullptr) {
  proto::Arrivals spec;
  const absl::Status parsed = ParseTextProto(text, "test", &spec);
  EXPECT_TRUE(parsed.ok()) << parsed;
  return CreateArrivalProcess(spec, seed, open, "arrivals");
}

std::vector<int64_t> Take(ArrivalProcess& p, int n) {
  std::vector<int64_t> times;
  int64_t t;
  while (static_cast<int>(times.size()) < n && p.Next(&t)) times.push_back(t);
  EXPECT_TRUE(p.status().ok()) << p.status();
  return times;
}

// Sample mean and coefficient of variation of the gaps, in seconds.
void GapStats(const std::vector<int64_t>& times, double* mean, double* cv) {
  const int n = static_cast<int>(times.size()) - 1;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) sum += (times[i + 1] - times[i]) * 1e-9;
  *mean = sum / n;
  for (int i = 0; i < n; ++i) {
    const double d = (times[i + 1] - times[i]) * 1e-9 - *mean;
    sum2 += d * d;
  }
  *cv = std::sqrt(sum2 / (n - 1)) / *mean;
}

TEST(ArrivalProcessTest, PoissonStartsAtZeroWithMeanGapOneOverRate) {
  auto p = Create("poisson {} rate_per_s: 100");
  ASSERT_TRUE(p.ok()) << p.status();
  const int n = 200001;
  std::vector<int64_t> times = Take(**p, n);
  ASSERT_EQ(static_cast<int>(times.size()), n);
  EXPECT_EQ(times[0], 0);
  for (size_t i = 1; i < times.size(); ++i) ASSERT_GE(times[i], times[i - 1]);
  double mean, cv;
  GapStats(times, &mean, &cv);
  // Exponential gaps of mean 0.01 s: sd 0.01 s; cv 1 with sd sqrt((1 + 1)/(2n)) = 1/sqrt(n).
  EXPECT_NEAR(mean, 0.01, kZ * 0.01 / std::sqrt(n - 1));
  EXPECT_NEAR(cv, 1.0, kZ / std::sqrt(n - 1));
  EXPECT_FALSE((*p)->finite());
}

// Gamma gaps with coefficient of variation c: the sample cv has sd c sqrt((1 + c^2)/(2n)) (delta
// method, derived in portable_random_test.cc).
class GammaArrivalsTest : public ::testing::TestWithParam<double> {};

TEST_P(GammaArrivalsTest, GapCvMatchesBurstiness) {
  const double c = GetParam();
  auto p = Create("gamma { cv: " + std::to_string(c) + " } rate_per_s: 50", 3);
  ASSERT_TRUE(p.ok()) << p.status();
  const int n = 200001;
  std::vector<int64_t> times = Take(**p, n);
  double mean, cv;
  GapStats(times, &mean, &cv);
  EXPECT_NEAR(mean, 0.02, kZ * c * 0.02 / std::sqrt(n - 1));
  EXPECT_NEAR(cv, c, kZ * c * std::sqrt((1 + c * c) / (2.0 * (n - 1))));
}

INSTANTIATE_TEST_SUITE_P(Cvs, GammaArrivalsTest, ::testing::Values(0.5, 2.0, 4.0));

// 100/s on [0, 10), 400/s on [10, 20), 0 after: counts are Poisson with means 1000 and 4000 (plus the
// arrival at 0), and the process ends.
TEST(ArrivalProcessTest, StepScheduleCountsPerWindow) {
  auto p = Create(
      "poisson {} schedule { points { time_s: 0 rate_per_s: 100 } "
      "points { time_s: 10 rate_per_s: 400 } points { time_s: 20 rate_per_s: 0 } }");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->finite());
  std::vector<int64_t> times = Take(**p, 1000000);
  int first = 0, second = 0;
  for (int64_t t : times) {
    ASSERT_LE(t, 20000000000);
    (t < 10000000000 ? first : second)++;
  }
  EXPECT_NEAR(first, 1001, kZ * std::sqrt(1000.0));
  EXPECT_NEAR(second, 4000, kZ * std::sqrt(4000.0));
}

// Rate rising linearly 0 -> 200/s over [0, 10) (r = 20 t): expected arrivals on [0, 5) = 250, on
// [5, 10) = 1000 - 250 = 750.
TEST(ArrivalProcessTest, LinearScheduleCountsPerWindow) {
  auto p = Create(
      "poisson {} schedule { interpolation: INTERPOLATION_LINEAR "
      "points { time_s: 0 rate_per_s: 0 } points { time_s: 10 rate_per_s: 200 } }",
      5);
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<int64_t> times = Take(**p, 5000);
  int first = 0, second = 0;
  for (int64_t t : times) {
    if (t < 5000000000)
      ++first;
    else if (t < 10000000000)
      ++second;
  }
  EXPECT_NEAR(first, 251, kZ * std::sqrt(250.0));
  EXPECT_NEAR(second, 750, kZ * std::sqrt(750.0));
}

TEST(ArrivalProcessTest, SameSeedSameTimesOtherSeedOtherTimes) {
  auto a = Create("gamma { cv: 2 } rate_per_s: 10", 42);
  auto b = Create("gamma { cv: 2 } rate_per_s: 10", 42);
  auto c = Create("gamma { cv: 2 } rate_per_s: 10", 43);
  const std::vector<int64_t> ta = Take(**a, 1000), tb = Take(**b, 1000), tc = Take(**c, 1000);
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TraceOpener TimesOpener(std::vector<int64_t> times) {
  return [times](const std::string& path) -> absl::StatusOr<std::unique_ptr<TraceReader>> {
    std::vector<Request> requests(times.size());
    for (size_t i = 0; i < times.size(); ++i) requests[i].arrival_ns = times[i];
    return std::unique_ptr<TraceReader>(new VectorTraceReader(requests, TraceInfo{path, "test", 0}));
  };
}

TEST(ArrivalProcessTest, ReplayDividesTimesBySpeedup) {
  auto p = Create(R"(replay { trace_path: "t.jsonl" speedup: 2 })", 1, TimesOpener({0, 5, 5, 12, 13}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->finite());
  // 5 / 2 = 2.5 rounds half away from zero to 3; 13 / 2 = 6.5 -> 7.
  EXPECT_EQ(Take(**p, 100), (std::vector<int64_t>{0, 3, 3, 6, 7}));
}

TEST(ArrivalProcessTest, ReplayRejectsDecreasingTimesNamingTheRecord) {
  auto p = Create(R"(replay { trace_path: "t.jsonl" })", 1, TimesOpener({0, 10, 9}));
  ASSERT_TRUE(p.ok()) << p.status();
  int64_t t;
  EXPECT_TRUE((*p)->Next(&t));
  EXPECT_TRUE((*p)->Next(&t));
  EXPECT_FALSE((*p)->Next(&t));
  EXPECT_EQ((*p)->status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*p)->status().message().find("t.jsonl: record 3: arrival_ns"), std::string::npos) << (*p)->status();
}

void ExpectInvalid(const std::string& text, const std::string& field, const TraceOpener& open = nullptr) {
  auto p = Create(text, 1, open);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << text;
  EXPECT_NE(p.status().message().find(field), std::string::npos) << p.status();
}

TEST(ArrivalProcessTest, InvalidSpecsNameTheField) {
  ExpectInvalid("rate_per_s: 3", "arrivals: no arrival process set");
  ExpectInvalid("poisson {}", "arrivals.rate_per_s");
  ExpectInvalid("poisson {} rate_per_s: -2", "arrivals.rate_per_s");
  ExpectInvalid("poisson {} rate_per_s: 2 schedule { points { time_s: 0 rate_per_s: 1 } }",
                "arrivals.rate_per_s: set either");
  ExpectInvalid("gamma { cv: 0 } rate_per_s: 2", "arrivals.gamma.cv");
  ExpectInvalid("gamma { cv: 1 } schedule { points { time_s: 1 rate_per_s: 1 } }",
                "arrivals.schedule.points[0].time_s");
  ExpectInvalid(R"(replay { trace_path: "t" } rate_per_s: 2)", "arrivals.rate_per_s");
  ExpectInvalid(R"(replay { trace_path: "t" speedup: -1 })", "arrivals.replay.speedup", TimesOpener({}));
  ExpectInvalid(R"(replay { })", "arrivals.replay.trace_path", TimesOpener({}));
  ExpectInvalid(R"(replay { trace_path: "t" })", "arrivals.replay.trace_path: traces cannot be opened");
}

}  // namespace
}  // namespace kvsim
