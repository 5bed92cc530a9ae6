#include "util/percentile.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(NearestRankTest, HandComputedRanks) {
  const std::vector<int64_t> v = {1, 2, 3, 4, 5};
  EXPECT_EQ(NearestRank(v, 0.20), 1);  // ceil(1) -> 1st
  EXPECT_EQ(NearestRank(v, 0.21), 2);  // ceil(1.05) -> 2nd
  EXPECT_EQ(NearestRank(v, 0.50), 3);  // ceil(2.5) -> 3rd
  EXPECT_EQ(NearestRank(v, 1.00), 5);
  EXPECT_EQ(NearestRank(v, 0.0), 1);  // below the first rank: the smallest
  EXPECT_EQ(NearestRank(v, 2.0), 5);  // beyond the last: the largest
  const std::vector<double> four = {10, 20, 30, 40};
  EXPECT_EQ(NearestRank(four, 0.50), 20);
  EXPECT_EQ(NearestRank(four, 0.90), 40);
  EXPECT_EQ(NearestRank(four, 0.75), 30);
}

TEST(NearestRankDeathTest, NoValuesIsAProgrammingError) {
  EXPECT_DEATH(NearestRank(std::vector<double>(), 0.5), "percentile of no values");
}

// Against numpy by hand: np.percentile([1, 2, 3, 4], [50, 90, 99]) = [2.5, 3.7, 3.97] (rank q x 3, e.g.
// 2.7 -> 3 + 0.7 x 1), np.percentile([15, 20, 35, 40, 50], 40) = 29 (rank 1.6 -> 20 + 0.6 x 15).
TEST(LinearPercentileTest, MatchesNumpysDefaultInterpolation) {
  const std::vector<double> four = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(LinearPercentile(four, 0.50), 2.5);
  EXPECT_DOUBLE_EQ(LinearPercentile(four, 0.90), 3.7);
  EXPECT_DOUBLE_EQ(LinearPercentile(four, 0.99), 3.97);
  EXPECT_DOUBLE_EQ(LinearPercentile(four, 0), 1);
  EXPECT_DOUBLE_EQ(LinearPercentile(four, 1), 4);
  EXPECT_DOUBLE_EQ(LinearPercentile({15, 20, 35, 40, 50}, 0.40), 29);
  EXPECT_DOUBLE_EQ(LinearPercentile({7}, 0.99), 7);
}

}  // namespace
}  // namespace kvsim
