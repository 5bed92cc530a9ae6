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

}  // namespace
}  // namespace kvsim
