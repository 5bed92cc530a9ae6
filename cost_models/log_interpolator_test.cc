#include "cost_models/log_interpolator.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// A decode-attention-like law: launch cost plus time proportional to the KV read (batch x context).
double DecodeLaw(double batch, double context) { return 4000 + 0.015 * batch * context + 30 * batch; }

std::vector<double> Powers(double from, double to) {
  std::vector<double> v;
  for (double x = from; x <= to; x *= 2) v.push_back(x);
  return v;
}

LogGridInterpolator::Prior Flat() {
  return [](const std::vector<double>&) { return 1.0; };
}

LogGridInterpolator DecodeGrid() {
  std::vector<LogGridInterpolator::Point> points;
  for (double b : Powers(1, 256)) {
    for (double l : Powers(256, 131072)) points.push_back({{b, l}, DecodeLaw(b, l)});
  }
  return *LogGridInterpolator::Build(points, 2);
}

TEST(LogGridInterpolatorTest, ReproducesTablePointsExactly) {
  // A ragged grid: each batch has its own contexts, values not from any law.
  std::vector<LogGridInterpolator::Point> points = {{{1, 0}, 7.0},   {{1, 100}, 11.0},  {{1, 1000}, 13.0},
                                                    {{4, 50}, 17.0}, {{4, 5000}, 19.0}, {{16, 10}, 23.0}};
  LogGridInterpolator interp = *LogGridInterpolator::Build(points, 2);
  for (const auto& p : points) {
    LogGridInterpolator::Result r = interp.Predict(p.features, Flat());
    EXPECT_NEAR(r.value, p.value, 1e-12 * p.value);
    EXPECT_FALSE(r.extrapolated);
  }
  // Duplicates average geometrically: sqrt(4 x 9) = 6.
  LogGridInterpolator dup = *LogGridInterpolator::Build({{{8}, 4.0}, {{8}, 9.0}, {{16}, 1.0}}, 1);
  EXPECT_NEAR(dup.Predict({8}, Flat()).value, 6.0, 1e-12);
}

TEST(LogGridInterpolatorTest, TwoPointsInterpolateLinearlyInLogLog) {
  // Between (1, 10) and (3, 90): log1p(x) key; at x = 2, w = (ln 3 - ln 2) / (ln 4 - ln 2) = 0.585;
  // value = exp((1 - w) ln 10 + w ln 90).
  LogGridInterpolator interp = *LogGridInterpolator::Build({{{1}, 10.0}, {{3}, 90.0}}, 1);
  const double w = (std::log(3.0) - std::log(2.0)) / (std::log(4.0) - std::log(2.0));
  EXPECT_NEAR(interp.Predict({2}, Flat()).value, std::exp((1 - w) * std::log(10.0) + w * std::log(90.0)), 1e-9);
}

TEST(LogGridInterpolatorTest, MonotoneWhereTheDataIs) {
  LogGridInterpolator interp = DecodeGrid();
  for (double b : {1.0, 3.0, 7.5, 100.0, 256.0}) {
    double last = 0;
    for (double l = 256; l <= 131072; l *= 1.07) {
      const double v = interp.Predict({b, l}, Flat()).value;
      EXPECT_GE(v, last) << "batch " << b << " context " << l;
      last = v;
    }
  }
  for (double l : {300.0, 5000.0, 100000.0}) {
    double last = 0;
    for (double b = 1; b <= 256; b *= 1.13) {
      const double v = interp.Predict({b, l}, Flat()).value;
      EXPECT_GE(v, last) << "batch " << b << " context " << l;
      last = v;
    }
  }
}

TEST(LogGridInterpolatorTest, KnownLawPredictedWithinTwoPercentAtHeldOutPoints) {
  LogGridInterpolator interp = DecodeGrid();
  double worst = 0;
  // Held-out points: geometric midpoints of every cell (the hardest place for the interpolation).
  for (double b : Powers(1, 128)) {
    for (double l : Powers(256, 65536)) {
      const double bq = b * std::sqrt(2.0), lq = l * std::sqrt(2.0);
      const LogGridInterpolator::Result r = interp.Predict({bq, lq}, Flat());
      EXPECT_FALSE(r.extrapolated);
      worst = std::max(worst, std::abs(r.value / DecodeLaw(bq, lq) - 1));
    }
  }
  EXPECT_LT(worst, 0.02);
  // A prefill-like law with a quadratic term, over chunk x prefix.
  auto prefill = [](double q, double c) { return 8000 + 0.9 * q + 2e-4 * q * c + 1e-4 * q * q; };
  std::vector<LogGridInterpolator::Point> points;
  for (double q : Powers(16, 8192)) {
    for (double c : Powers(1024, 131072)) points.push_back({{q, c}, prefill(q, c)});
  }
  LogGridInterpolator pre = *LogGridInterpolator::Build(points, 2);
  worst = 0;
  for (double q : Powers(16, 4096)) {
    for (double c : Powers(1024, 65536)) {
      const double qq = q * 1.5, cq = c * 1.3;
      worst = std::max(worst, std::abs(pre.Predict({qq, cq}, Flat()).value / prefill(qq, cq) - 1));
    }
  }
  EXPECT_LT(worst, 0.02);
}

TEST(LogGridInterpolatorTest, ExtrapolationFollowsThePriorAndSaysSo) {
  LogGridInterpolator interp = DecodeGrid();
  // The prior is half the true law: anchored at the boundary, the ratio cancels the factor, so the
  // prediction beyond the grid equals the law itself.
  LogGridInterpolator::Prior prior = [](const std::vector<double>& f) { return 0.5 * DecodeLaw(f[0], f[1]); };
  for (const std::vector<double>& q :
       std::vector<std::vector<double>>{{512, 4096}, {64, 1 << 20}, {1024, 1 << 19}, {8, 16}}) {
    const LogGridInterpolator::Result r = interp.Predict(q, prior);
    EXPECT_TRUE(r.extrapolated);
    EXPECT_NEAR(r.value, DecodeLaw(q[0], q[1]), 1e-9 * r.value);
  }
  EXPECT_FALSE(interp.Predict({64, 4096}, prior).extrapolated);
}

TEST(LogGridInterpolatorTest, RejectsBadPoints) {
  EXPECT_EQ(LogGridInterpolator::Build({}, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LogGridInterpolator::Build({{{1, 2}, 1.0}}, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LogGridInterpolator::Build({{{-1}, 1.0}}, 1).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<LogGridInterpolator> zero = LogGridInterpolator::Build({{{1}, 0.0}}, 1);
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("value 0"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
