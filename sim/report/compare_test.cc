#include "sim/report/compare.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

ResultSet Replay(double ttft_mean, double throughput) {
  ResultSet s;
  s.kind = ResultKind::kReplay;
  s.path = "r";
  s.json = Json::parse(absl::StrCat(R"({"summary": {"ttft_ms": {"mean": )", ttft_mean,
                                    R"(}, "throughput_requests_per_s": )", throughput, R"(, "slo_set": true}})"));
  return s;
}

const MetricDelta& Find(const Comparison& c, const std::string& name) {
  for (const MetricDelta& d : c.deltas) {
    if (d.name == name) return d;
  }
  static const MetricDelta none;
  ADD_FAILURE() << "no metric " << name;
  return none;
}

TEST(CompareTest, DirectionAware) {
  // TTFT up 10% (worse), throughput up 10% (better); tolerance 5%.
  auto c = CompareResults({Replay(100, 2)}, {Replay(110, 2.2)}, {}, 5);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NEAR(Find(*c, "ttft_ms.mean").change_pct, 10, 1e-9);
  EXPECT_TRUE(Find(*c, "ttft_ms.mean").regressed);
  EXPECT_NEAR(Find(*c, "throughput_requests_per_s").change_pct, 10, 1e-9);
  EXPECT_FALSE(Find(*c, "throughput_requests_per_s").regressed);
  EXPECT_EQ(c->regressions, 1);
  EXPECT_TRUE(std::isnan(Find(*c, "ttft_ms.mean").ci_low_pct));  // one run per side: no interval
  // Throughput down 10% is a regression; TTFT down is not.
  auto d = CompareResults({Replay(100, 2)}, {Replay(90, 1.8)}, {}, 5);
  EXPECT_TRUE(Find(*d, "throughput_requests_per_s").regressed);
  EXPECT_FALSE(Find(*d, "ttft_ms.mean").regressed);
}

TEST(CompareTest, ToleranceByNameAndPrefix) {
  auto t = ParseTolerances("ttft_ms.*:15,throughput_requests_per_s:1%");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[1].pct, 1);
  auto c = CompareResults({Replay(100, 2)}, {Replay(110, 1.97)}, *t, 5);
  EXPECT_FALSE(Find(*c, "ttft_ms.mean").regressed);  // 10% < 15% (prefix pattern)
  EXPECT_EQ(Find(*c, "ttft_ms.mean").tolerance_pct, 15);
  EXPECT_TRUE(Find(*c, "throughput_requests_per_s").regressed);  // -1.5% beyond 1%
  for (const char* bad : {"ttft", "ttft:-1", ":5", "ttft:x"}) {
    EXPECT_EQ(ParseTolerances(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CompareTest, WelchIntervalHandComputed) {
  // Baseline 10, 12, 14 (mean 12, variance 4); candidate 11, 13, 15 (mean 13, variance 4).
  // se = sqrt(4/3 + 4/3) = 1.63299; Welch df = (8/3)^2 / (2 x (4/3)^2 / 2) = 4; t(0.975, 4) = 2.776.
  // Difference 1 +- 4.53319, in % of 12: 8.3333 +- 37.7766 -> [-29.4432, 46.1099].
  auto c = CompareResults({Replay(10, 1), Replay(12, 1), Replay(14, 1)}, {Replay(11, 1), Replay(13, 1), Replay(15, 1)},
                          {}, 5);
  ASSERT_TRUE(c.ok());
  const MetricDelta& d = Find(*c, "ttft_ms.mean");
  EXPECT_NEAR(d.change_pct, 8.33333, 1e-4);
  EXPECT_NEAR(d.ci_low_pct, -29.4432, 1e-3);
  EXPECT_NEAR(d.ci_high_pct, 46.1099, 1e-3);
  EXPECT_FALSE(d.regressed);  // 8.3% > 5%, but the interval includes no change
  EXPECT_EQ(d.baseline_runs, 3);
  // Far apart with little noise: the interval excludes 0 and the change exceeds 5%.
  auto far = CompareResults({Replay(100, 1), Replay(101, 1)}, {Replay(120, 1), Replay(121, 1)}, {}, 5);
  EXPECT_TRUE(Find(*far, "ttft_ms.mean").regressed);
}

TEST(CompareTest, TQuantiles) {
  EXPECT_DOUBLE_EQ(TQuantile975(1), 12.706);
  EXPECT_DOUBLE_EQ(TQuantile975(10), 2.228);
  EXPECT_DOUBLE_EQ(TQuantile975(30), 2.042);
  EXPECT_DOUBLE_EQ(TQuantile975(1000), 1.96);
}

TEST(CompareTest, KindsMustMatch) {
  ResultSet q;
  q.kind = ResultKind::kQuality;
  q.json = Json::parse(R"({"points": [], "areas": []})");
  EXPECT_EQ(CompareResults({Replay(1, 1)}, {q}, {}, 5).status().code(), absl::StatusCode::kInvalidArgument);
  ResultSet svg;
  svg.kind = ResultKind::kSvg;
  EXPECT_EQ(CompareResults({svg}, {svg}, {}, 5).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CompareTest, MarkdownRowsHaveTheHeadersCellCount) {
  auto c = CompareResults({Replay(100, 2)}, {Replay(110, 2)}, {}, 5);
  const std::string md = FormatComparisonMarkdown(*c);
  EXPECT_NE(md.find("| metric | better | baseline |"), std::string::npos) << md;
  EXPECT_NE(md.find("**REGRESSED**"), std::string::npos);
  EXPECT_NE(md.find("|---|---|---:|"), std::string::npos);
}

}  // namespace
}  // namespace kvsim
