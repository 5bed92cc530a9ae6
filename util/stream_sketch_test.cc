#include "util/stream_sketch.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "util/percentile.h"

namespace kvsim {
namespace {

TEST(DistinctCounterTest, ExactUpToTheLimit) {
  DistinctCounter counter(/*exact_limit=*/1000);
  for (int round = 0; round < 3; ++round) {
    for (uint64_t v = 0; v < 1000; ++v) counter.Add(v * 7919);
  }
  EXPECT_TRUE(counter.exact());
  EXPECT_EQ(counter.Count(), 1000);
}

// Past the limit the HyperLogLog estimate is within 4 standard errors of the truth, for sequential and
// random values, small and large counts (the linear-counting range and the raw estimate's).
TEST(DistinctCounterTest, EstimateWithinItsErrorBound) {
  std::mt19937_64 rng(11);
  for (int64_t n : {2000, 30000, 200000, 3000000}) {
    for (bool sequential : {true, false}) {
      DistinctCounter counter(/*exact_limit=*/1000);
      std::vector<uint64_t> values;
      for (int64_t i = 0; i < n; ++i) values.push_back(sequential ? static_cast<uint64_t>(i) : rng());
      for (uint64_t v : values) counter.Add(v);
      for (int64_t i = 0; i < n; i += 3) counter.Add(values[i]);  // repeats change nothing
      EXPECT_FALSE(counter.exact());
      const double error = std::abs(static_cast<double>(counter.Count()) - n) / n;
      EXPECT_LE(error, 4 * DistinctCounter::kRelativeStandardError) << "n=" << n << " sequential=" << sequential;
    }
  }
}

// UpperCount: the count itself while exact, three standard errors above the estimate after, and then above
// the true count (the estimate above is within 4 standard errors, so this is checked at the larger counts).
TEST(DistinctCounterTest, UpperCount) {
  DistinctCounter small(/*exact_limit=*/1000);
  for (uint64_t v = 0; v < 500; ++v) small.Add(v);
  EXPECT_EQ(small.UpperCount(), 500);
  DistinctCounter large(/*exact_limit=*/1000);
  for (uint64_t v = 0; v < 300000; ++v) large.Add(v);
  ASSERT_FALSE(large.exact());
  EXPECT_NEAR(static_cast<double>(large.UpperCount()), large.Count() * 1.0243, 1.0);
  EXPECT_GE(large.UpperCount(), 300000);
}

TEST(QuantileSketchTest, ExactWhileFewDistinctValues) {
  QuantileSketch sketch(/*exact_limit=*/100);
  std::vector<int64_t> values;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10001; ++i) values.push_back(static_cast<int64_t>(rng() % 90) * 37);
  for (int64_t v : values) sketch.Add(v);
  std::sort(values.begin(), values.end());
  ASSERT_TRUE(sketch.exact());
  for (double q : {0.01, 0.25, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(sketch.Quantile(q), NearestRank(values, q)) << q;
  EXPECT_EQ(sketch.min(), values.front());
  EXPECT_EQ(sketch.max(), values.back());
  long double sum = 0;
  for (int64_t v : values) sum += v;
  EXPECT_DOUBLE_EQ(sketch.Mean(), static_cast<double>(sum / values.size()));
}

// Many distinct values (log-normal lengths and a heavy tail up to 2^40, zeros included): every quantile is
// within 1% + 0.5 of the exact nearest-rank value; count, sum, min and max stay exact.
TEST(QuantileSketchTest, ApproximateWithinRelativeBound) {
  QuantileSketch sketch(/*exact_limit=*/64);
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> lengths(7.0, 1.5);
  std::vector<int64_t> values;
  for (int i = 0; i < 200000; ++i) {
    int64_t v = static_cast<int64_t>(lengths(rng));
    if (i % 1000 == 0) v = 0;
    if (i % 9973 == 0) v = int64_t{1} << 40;
    values.push_back(v);
  }
  for (int64_t v : values) sketch.Add(v);
  std::sort(values.begin(), values.end());
  ASSERT_FALSE(sketch.exact());
  for (double q : {0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0}) {
    const double exact = static_cast<double>(NearestRank(values, q));
    EXPECT_LE(std::abs(sketch.Quantile(q) - exact), QuantileSketch::kQuantileRelativeError * exact + 0.5)
        << "q=" << q << " exact " << exact << " sketch " << sketch.Quantile(q);
  }
  EXPECT_EQ(sketch.count(), 200000);
  EXPECT_EQ(sketch.min(), 0);
  EXPECT_EQ(sketch.max(), int64_t{1} << 40);
  EXPECT_EQ(sketch.Quantile(1.0), int64_t{1} << 40);
}

TEST(QuantileSketchTest, EmptyIsZero) {
  QuantileSketch sketch;
  EXPECT_EQ(sketch.Quantile(0.5), 0);
  EXPECT_EQ(sketch.Mean(), 0);
  EXPECT_TRUE(sketch.exact());
}

}  // namespace
}  // namespace kvsim
